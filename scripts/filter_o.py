"""``imagenet-cp filter-o``: adversarial filtration of ImageNet-O candidates (see pipelines.beam.adversarial_filter)."""
from scripts.adversarial_options import add_filter_arguments, run_filter

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "filter-o"
HELP = ("ImageNet-O construction: score out-of-distribution candidates by the max softmax probability over "
        "the O classes on 10 crops, keep the confident ones, top k per predicted class; write "
        "decisions.jsonl and a review sheet")


def add_arguments(parser):
    add_filter_arguments(parser, "imagenet_o")


def run(args) -> int:
    return run_filter(args, "imagenet_o")
