"""``imagenet-cp build-vcr``: build a VCR test set (PNG tree, clean crops, TFDS shards, manifests)."""
import sys

from scripts.build_options import add_output_arguments, add_source_arguments, names, run_build
from scripts.release_digest import finish_build

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "build-vcr"

HELP = ("build a VCR release: continuous corruptions with their measured delta_v = 1 - VIF, vcr/ PNG tree with "
        "the clean crops, TFDS 'vcr' shards, manifests")


def add_arguments(parser):
    add_source_arguments(parser)
    parser.add_argument("--corruptions", type=names, help="comma-separated VCR corruption names (default: all 11)")
    parser.add_argument("--levels", type=int, default=5, help="parameter draws per image and corruption (default 5)")
    parser.add_argument("--per-bin", type=int, default=0,
                        help="keep at most N examples per corruption and delta_v bin, chosen by a seed-derived "
                             "rank; bins left with fewer are listed (default 0: keep every draw)")
    parser.add_argument("--bins", type=int, default=20, help="delta_v bins of --per-bin (default 20)")
    parser.add_argument("--parameters", default="grid",
                        help="'grid' (a value of VCR's 1000-point grids, default) or 'uniform' (U(low, high))")
    parser.add_argument("--operators", default="imagenet-c",
                        help="'imagenet-c' (the ImageNet-C operators, default) or 'vcr-code' (VCR code's own "
                             "glass blur and frost variants); recorded in release.json")
    parser.add_argument("--dv-resolution", choices=("224crop", "native"), default="224crop",
                        help="corrupt and measure delta_v on the 224x224 crop the model sees (default) or on the "
                             "image at its native size, as VCR's code (the model then sees Resize(256) + "
                             "CenterCrop(224) of the corrupted image); recorded in release.json")
    add_output_arguments(parser, "average examples per TFRecord shard (default 2048)")


def run(args) -> int:
    from schemas.configs import VcrConfig

    def build(*a, **k):
        from pipelines.beam.vcr import build_vcr
        return build_vcr(*a, **k)

    chosen = {}

    def config(a):
        chosen["config"] = VcrConfig.select(a.corruptions, a.levels, a.seed, a.per_bin, a.bins, a.parameters,
                                            a.operators, a.dv_resolution)
        return chosen["config"]

    code = run_build(args, build, config)
    from pipelines.beam.vcr import short_bins
    from pipelines.formats import storage

    if "config" in chosen and code != 2 and storage.is_local(args.output):
        config = chosen["config"]
        for corruption, bins in short_bins(args.output, config).items():
            listed = ", ".join(f"{i} ({n})" for i, n in bins.items())
            print(f"warning: {corruption}: {len(bins)} of {config.bins} delta_v bins hold fewer than "
                  f"--per-bin {config.per_bin} examples: bin (count) {listed}; add images or --levels",
                  file=sys.stderr)
    return finish_build(args.output, code)
