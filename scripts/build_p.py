"""``imagenet-cp build-p``: build an ImageNet-P release (MP4 tree, TFDS shards, manifests)."""
import argparse

from scripts.build_options import add_format_arguments, add_output_arguments, add_source_arguments, ints, names, run_build
from scripts.release_digest import finish_build

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "build-p"

HELP = "build an ImageNet-P release: ImageNet-P/ MP4 tree, TFDS imagenet_p shards, manifests"


def add_arguments(parser):
    from schemas.editions import DEFAULT_EDITION, edition_help

    add_source_arguments(parser)
    parser.add_argument("--perturbations", type=names, help="comma-separated perturbation names (default: all 14)")
    parser.add_argument("--difficulties", type=ints,
                        help="comma-separated difficulties 1..3 (default: all; only the noise types have 2 and 3)")
    parser.add_argument("--preset", default="veryslow",
                        help="x264 preset, ultrafast .. placebo (default: veryslow, the reference's); faster "
                             "presets give larger files")
    parser.add_argument("--simd", action=argparse.BooleanOptionalAction, default=True,
                        help="x264's SIMD code in cpu-independent mode (default), 2-3x faster than --no-simd, "
                             "x264's plain C code; both give the same MP4 bytes on every CPU")
    parser.add_argument("--tfds-frames", choices=("decoded", "lossless"), default="decoded",
                        help="what the TFDS video feature holds: the frames decoded from the release's own MP4s "
                             "as the official evaluator reads them (default), or the lossless frames before the "
                             "H.264 encode")
    parser.add_argument("--edition", default=DEFAULT_EDITION, help=edition_help("p"))
    add_format_arguments(parser)
    add_output_arguments(parser, "average examples (videos) per TFRecord shard (default 32, about 100 MB)")


def run(args) -> int:
    from pipelines.formats.video import VideoEncoderError

    def build(*a, **k):
        from pipelines.beam.imagenet_p import build_imagenet_p
        return build_imagenet_p(*a, **k)

    def config(a):
        from schemas.configs import ImageNetPConfig
        return ImageNetPConfig.select(a.perturbations, a.difficulties, a.preset, a.simd, a.seed, a.tfds_frames,
                                      a.edition)

    return finish_build(args.output, run_build(args, build, config, errors=(ValueError, VideoEncoderError)))
