"""``imagenet-cp package-o``: the reviewed ImageNet-O shortlist in the official layout, with manifest and tar."""
from scripts.adversarial_options import add_package_arguments, run_package

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "package-o"
HELP = ("write the accepted ImageNet-O items of a filter run as imagenet-o/<wnid>/<file> + README.txt, "
        "manifest, SHA256SUMS and imagenet-o.tar")


def add_arguments(parser):
    add_package_arguments(parser)


def run(args) -> int:
    return run_package(args, "imagenet_o")
