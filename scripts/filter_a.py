"""``imagenet-cp filter-a``: adversarial filtration of ImageNet-A candidates (see pipelines.beam.adversarial_filter)."""
from scripts.adversarial_options import add_filter_arguments, run_filter

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "filter-a"
HELP = ("ImageNet-A construction: run filter classifiers on 10 crops of weakly labelled candidates, reject "
        "easy ones (R1: any crop correct; R2: P(label) > threshold), cap each confusion; write "
        "decisions.jsonl and a review sheet")


def add_arguments(parser):
    add_filter_arguments(parser, "imagenet_a")


def run(args) -> int:
    return run_filter(args, "imagenet_a")
