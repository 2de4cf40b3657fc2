"""``imagenet-cp build-c``: build an ImageNet-C release (folder tree, TFDS shards, manifests)."""
from scripts.build_options import add_format_arguments, add_output_arguments, add_source_arguments, ints, names, run_build
from scripts.release_digest import finish_build

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


def check(args) -> None:
    """The selection's names, before Beam is imported (ImageNetCConfig.select checks the rest)."""
    from schemas.editions import EDITIONS
    from schemas.imagenet_c import SEVERITIES, select_corruptions

    if args.edition not in EDITIONS:
        raise ValueError(f"unknown edition {args.edition!r}; valid editions: {', '.join(EDITIONS)}")
    select_corruptions(args.corruptions)
    if args.severities is not None and (not args.severities or any(s not in SEVERITIES for s in args.severities)):
        raise ValueError(f"severities must be a non-empty subset of {list(SEVERITIES)}, got {args.severities}")


def run(args) -> int:
    from schemas.editions import EDITIONS

    def build(*a, **k):
        from pipelines.beam.build import build_imagenet_c
        return build_imagenet_c(*a, **k)

    def config(a):
        from pipelines.beam.imagenet_c import ImageNetCConfig
        return ImageNetCConfig.select(a.corruptions, a.severities, a.seed, a.rng, a.edition, a.clean)

    edition = EDITIONS.get(args.edition)
    default_per_shard = edition.c.examples_per_shard if edition else None  # None: the build's own default
    return finish_build(args.output, run_build(args, build, config, default_per_shard, check=check))
