"""``imagenet-cp build-c``: build an ImageNet-C release (folder tree, TFDS shards, manifests)."""
from scripts.build_options import add_format_arguments, add_output_arguments, add_source_arguments, ints, names, run_build
from scripts.release_digest import finish_build

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "build-c"

HELP = ("build an ImageNet-C release of any edition: the official tree (ImageNet-C/ JPEGs, CIFAR-10-C/ .npy, ...), "
        "TFDS shards, manifests")



def add_arguments(parser):
    from schemas.editions import DEFAULT_EDITION, edition_help

    add_source_arguments(parser)
    parser.add_argument("--edition", default=DEFAULT_EDITION, help=edition_help("c"))
    parser.add_argument("--corruptions", type=names, help="comma-separated corruption names (default: all 19)")
    parser.add_argument("--severities", type=ints, help="comma-separated severities 1..5 (default: all)")
    parser.add_argument("--rng", default="reference",
                        help="random streams: 'reference' (legacy RandomState, seed-comparable with the reference "
                             "code) or 'fast' (NumPy Generator on PCG64, same distributions, other samples); "
                             "recorded in release.json (default: reference)")
    parser.add_argument("--no-clean", dest="clean", action="store_false",
                        help="leave out the clean config (ImageNet-C/clean/, TFDS config clean): the images "
                             "exactly as the corruptions received them, for the clean error of Relative mCE")
    add_format_arguments(parser)
    add_output_arguments(parser, "average examples per TFRecord shard (default: the edition's; 2048 for imagenet)")


def run(args) -> int:
    def build(*a, **k):
        from pipelines.beam.imagenet_c import build_imagenet_c
        return build_imagenet_c(*a, **k)

    def config(a):
        from schemas.configs import ImageNetCConfig
        return ImageNetCConfig.select(a.corruptions, a.severities, a.seed, a.rng, a.edition, a.clean)

    return finish_build(args.output, run_build(args, build, config))
