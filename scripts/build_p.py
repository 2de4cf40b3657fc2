"""``imagenet-cp build-p``: build an ImageNet-P release (MP4 tree, TFDS shards, manifests)."""
import argparse
import sys

from scripts.build_c import _ints, _names

NAME = "build-p"
HELP = "build an ImageNet-P release: imagenet-p/ MP4 tree, TFDS imagenet_p shards, manifests"


def add_arguments(parser):
    parser.add_argument("--input", help="ImageNet val folder (<wnid>/<file> or flat), ILSVRC2012_img_val.tar, "
                        "or a prepared TFDS imagenet2012 folder (default: the bundled sample)")
    parser.add_argument("--output", required=True, help="release directory")
    parser.add_argument("--workers", type=int, help="local worker processes (default: all cores)")
    parser.add_argument("--perturbations", type=_names, help="comma-separated perturbation names (default: all 14)")
    parser.add_argument("--difficulties", type=_ints,
                        help="comma-separated difficulties 1..3 (default: all; only the noise types have 2 and 3)")
    parser.add_argument("--preset", default="veryslow",
                        help="x264 preset, ultrafast .. placebo (default: veryslow, the reference's); faster "
                             "presets give larger files")
    parser.add_argument("--simd", action="store_true",
                        help="let x264 use the CPU's SIMD code: 2-4x faster encodes, but the MP4 bytes may then "
                             "differ between CPUs (default: plain C code, the same bytes everywhere)")
    parser.add_argument("--limit", type=int, help="only the first N images in key order")
    parser.add_argument("--image-ids", help="file of <wnid>/<file> or <file> lines to keep")
    parser.add_argument("--seed", "--release-seed", dest="seed", type=int, default=0,
                        help="release seed of the per-example seeds (default 0)")
    parser.add_argument("--examples-per-shard", type=int, default=None,
                        help="average examples (videos) per TFRecord shard (default 32, about 100 MB)")
    parser.add_argument("beam_args", nargs=argparse.REMAINDER,
                        help="after '--': Beam pipeline options, e.g. -- --runner=DataflowRunner --project=P "
                             "--region=R --temp_location=gs://B/tmp --setup_file=./setup.py")


def run(args) -> int:
    from pipelines.build import SourceSelection
    from pipelines.imagenet_p import DEFAULT_EXAMPLES_PER_SHARD, ImageNetPConfig, build_imagenet_p
    from pipelines.video import VideoEncoderError

    beam_args = [a for a in args.beam_args if a != "--"]
    try:
        config = ImageNetPConfig.select(args.perturbations, args.difficulties, args.preset, args.simd, args.seed)
        result = build_imagenet_p(
            args.output, SourceSelection(args.input, args.image_ids, args.limit), config,
            workers=args.workers, beam_args=beam_args,
            examples_per_shard=args.examples_per_shard or DEFAULT_EXAMPLES_PER_SHARD)
    except (ValueError, VideoEncoderError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(result.summary(args.output))
    return 1 if result.failures else 0
