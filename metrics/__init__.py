"""Benchmark metrics for ImageNet-C, ImageNet-P, ImageNet-A and ImageNet-O.

Pure NumPy functions on errors, predictions and logits; baselines come from ``schemas.baselines``.
"""
from metrics.detection import auroc, average_precision, fpr_at_tpr
from metrics.imagenet_a_o import imagenet_a_accuracy, imagenet_o_metrics, max_softmax
from metrics.imagenet_c import (corruption_error, relative_corruption_error, summarize_imagenet_c,
                                unnormalized_ce)
from metrics.imagenet_p import (flip_probability, frame_pairs, mean_top5_distance,
                                summarize_imagenet_p, top5_distance, top5_distance_from_ranks,
                                top_k_classes)

__all__ = [
    "auroc", "average_precision", "fpr_at_tpr",
    "imagenet_a_accuracy", "imagenet_o_metrics", "max_softmax",
    "corruption_error", "relative_corruption_error", "summarize_imagenet_c", "unnormalized_ce",
    "flip_probability", "frame_pairs", "mean_top5_distance", "summarize_imagenet_p",
    "top5_distance", "top5_distance_from_ranks", "top_k_classes",
]
