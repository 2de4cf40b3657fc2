"""``imagenet-cp build-p``: build an ImageNet-P release (MP4 tree, TFDS shards, manifests)."""
from scripts.build_options import add_output_arguments, add_source_arguments, ints, names, run_build

NAME = "build-p"
HELP = "build an ImageNet-P release: imagenet-p/ MP4 tree, TFDS imagenet_p shards, manifests"


def add_arguments(parser):
    add_source_arguments(parser)
    parser.add_argument("--perturbations", type=names, help="comma-separated perturbation names (default: all 14)")
    parser.add_argument("--difficulties", type=ints,
                        help="comma-separated difficulties 1..3 (default: all; only the noise types have 2 and 3)")
    parser.add_argument("--preset", default="veryslow",
                        help="x264 preset, ultrafast .. placebo (default: veryslow, the reference's); faster "
                             "presets give larger files")
    parser.add_argument("--simd", action="store_true",
                        help="let x264 use the CPU's SIMD code: 2-4x faster encodes, but the MP4 bytes may then "
                             "differ between CPUs (default: plain C code, the same bytes everywhere)")
    add_output_arguments(parser, "average examples (videos) per TFRecord shard (default 32, about 100 MB)")


def check(args) -> None:
    """The selection's names, before Beam is imported (ImageNetPConfig.select checks the rest)."""
    from schemas.imagenet_p import select_perturbations

    select_perturbations(args.perturbations)
    if args.difficulties is not None and (not args.difficulties or any(d not in (1, 2, 3) for d in args.difficulties)):
        raise ValueError(f"difficulties must be a non-empty subset of [1, 2, 3], got {args.difficulties}")


def run(args) -> int:
    from pipelines.video import VideoEncoderError

    def build(*a, **k):
        from pipelines.imagenet_p import build_imagenet_p
        return build_imagenet_p(*a, **k)

    def config(a):
        from pipelines.imagenet_p import ImageNetPConfig
        return ImageNetPConfig.select(a.perturbations, a.difficulties, a.preset, a.simd, a.seed)

    return run_build(args, build, config, errors=(ValueError, VideoEncoderError), check=check)
