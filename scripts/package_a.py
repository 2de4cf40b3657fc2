"""``imagenet-cp package-a``: the reviewed ImageNet-A shortlist in the official layout, with manifest and tar."""
from scripts.adversarial_options import add_package_arguments, run_package

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "package-a"
HELP = ("write the accepted ImageNet-A items of a filter run as imagenet-a/<wnid>/<file> + README.txt, "
        "manifest, SHA256SUMS and imagenet-a.tar")


def add_arguments(parser):
    add_package_arguments(parser)


def run(args) -> int:
    return run_package(args, "imagenet_a")
