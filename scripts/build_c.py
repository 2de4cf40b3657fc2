"""``imagenet-cp build-c``: build an ImageNet-C release (folder tree, TFDS shards, manifests)."""
import argparse
import sys

NAME = "build-c"
HELP = "build an ImageNet-C release: imagenet-c/ JPEG tree, TFDS imagenet2012_corrupted shards, manifests"


def _names(text):
    return [part for part in text.split(",") if part]


def _ints(text):
    try:
        return [int(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def add_arguments(parser):
    parser.add_argument("--input", help="ImageNet val folder (<wnid>/<file> or flat), ILSVRC2012_img_val.tar, "
                        "or a prepared TFDS imagenet2012 folder (default: the bundled sample)")
    parser.add_argument("--output", required=True, help="release directory")
    parser.add_argument("--workers", type=int, help="local worker processes (default: all cores)")
    parser.add_argument("--corruptions", type=_names, help="comma-separated corruption names (default: all 19)")
    parser.add_argument("--severities", type=_ints, help="comma-separated severities 1..5 (default: all)")
    parser.add_argument("--limit", type=int, help="only the first N images in key order")
    parser.add_argument("--image-ids", help="file of <wnid>/<file> or <file> lines to keep (e.g. RobustBench's 5,000)")
    parser.add_argument("--seed", type=int, default=0, help="release seed of the per-example seeds (default 0)")
    parser.add_argument("--rng", default="reference",
                        help="random streams: 'reference' (legacy RandomState, seed-comparable with the reference "
                             "code) or 'fast' (NumPy Generator on PCG64, same distributions, other samples); "
                             "recorded in release.json (default: reference)")
    parser.add_argument("--examples-per-shard", type=int, default=None,
                        help="average examples per TFRecord shard (default 2048)")
    parser.add_argument("beam_args", nargs=argparse.REMAINDER,
                        help="after '--': Beam pipeline options, e.g. -- --runner=DataflowRunner --project=P "
                             "--region=R --temp_location=gs://B/tmp --setup_file=./setup.py")


def run(args) -> int:
    from pipelines.build import DEFAULT_EXAMPLES_PER_SHARD, SourceSelection, build_imagenet_c
    from pipelines.imagenet_c import ImageNetCConfig

    beam_args = [a for a in args.beam_args if a != "--"]
    try:
        config = ImageNetCConfig.select(args.corruptions, args.severities, args.seed, args.rng)
        result = build_imagenet_c(
            args.output, SourceSelection(args.input, args.image_ids, args.limit), config,
            workers=args.workers, beam_args=beam_args,
            examples_per_shard=args.examples_per_shard or DEFAULT_EXAMPLES_PER_SHARD)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(result.summary(args.output))
    return 1 if result.failures else 0
