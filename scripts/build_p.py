"""``imagenet-cp build-p``: build an ImageNet-P release (MP4 tree, TFDS shards, manifests)."""
import argparse

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
    parser.add_argument("--simd", action=argparse.BooleanOptionalAction, default=True,
                        help="x264's SIMD code in cpu-independent mode (default), 2-3x faster than --no-simd, "
                             "x264's plain C code; both give the same MP4 bytes on every CPU")
    parser.add_argument("--tfds-frames", choices=("decoded", "lossless"), default="decoded",
                        help="what the TFDS video feature holds: the frames decoded from the release's own MP4s "
                             "as the official evaluator reads them (default), or the lossless frames before the "
                             "H.264 encode")
    parser.add_argument("--edition", default="imagenet",
                        help="imagenet (224, default), inception (299), tinyimagenet (64), imagenet64 (64) or cifar "
                             "(CIFAR-10-P .npy layout; an ImageNet-style input is Resize(32) + CenterCrop(32))")
    add_output_arguments(parser, "average examples (videos) per TFRecord shard (default 32, about 100 MB)")


def run(args) -> int:
    from pipelines.imagenet_p import DEFAULT_EXAMPLES_PER_SHARD, ImageNetPConfig, build_imagenet_p
    from pipelines.video import VideoEncoderError

    def config(a):
        return ImageNetPConfig.select(a.perturbations, a.difficulties, a.preset, a.simd, a.seed, a.tfds_frames, a.edition)

    return run_build(args, build_imagenet_p, config, DEFAULT_EXAMPLES_PER_SHARD,
                     errors=(ValueError, VideoEncoderError))
