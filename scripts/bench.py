"""``imagenet-cp bench``: milliseconds per image for every corruption, decode and encode, and per
sequence for every ImageNet-P perturbation, generation and video encoding apart."""
import argparse
import json
import os
import sys

from pipelines.bench.full_size_plan import CONFIG_CHOICES, EVALUATED_CONFIGS
from schemas.editions import DEFAULT_EDITION, EDITIONS

__all__ = ["NAME", "CORRUPTS_IMAGES", "HELP", "add_arguments", "run"]

NAME = "bench"
CORRUPTS_IMAGES = True

HELP = ("time every corruption at every severity on real photographs, plus JPEG decode and encode; and every "
        "ImageNet-P perturbation: sequence generation, H.264 encode and lossless frames")


def _int_list(text):
    try:
        return [int(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def add_arguments(parser):
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls per measurement; the median is kept")
    parser.add_argument("--images", type=int, default=5, help="how many photographs to average over (1..5)")
    parser.add_argument("--corruptions", help="comma-separated names to time (default: all 19)")
    parser.add_argument("--editions", help="comma-separated editions to time the corruptions in (default: every "
                                           "edition: imagenet, inception, tinyimagenet, imagenet64, cifar); 'none' "
                                           "skips the per-edition table")
    parser.add_argument("--rng", help="comma-separated random modes to time, reference and/or fast (default: both; "
                        "with --scaling, one mode, default reference)")
    parser.add_argument("--clock", default="wall", choices=("wall", "cpu"),
                        help="what the per-image figures measure: wall time (default) or this process's CPU time, "
                             "which other processes' load on a shared machine does not stretch")
    parser.add_argument("--scaling", action="store_true",
                        help="instead: run the real ImageNet-C build on a synthetic ImageNet-layout set for every "
                             "--sizes x --workers, reporting images/s, CPU seconds and peak memory per process, and "
                             "(with two sizes or more) the build's CPU cost per image beside the bench's; and, on the "
                             "smallest size, the release format's own floor (one process, no Beam, no parts)")
    parser.add_argument("--sizes", type=_int_list,
                        help="with --scaling: comma-separated image counts (default 100,250,500)")
    parser.add_argument("--workers", type=_int_list,
                        help="with --scaling or --evaluate: comma-separated worker counts (default 1,2)")
    parser.add_argument("--resume", action="store_true",
                        help="with --scaling: also kill the largest build half way (SIGKILL of the driver and its "
                             "workers) and time its rerun against the uninterrupted build")
    parser.add_argument("--perturbations",
                        help="comma-separated ImageNet-P names to time (default: all 14, or none when "
                             "--corruptions is given)")
    parser.add_argument("--preset", default="veryslow", help="x264 preset of the ImageNet-P encodes (default veryslow)")
    parser.add_argument("--evaluate", metavar="MODEL",
                        help="instead: time imagenet-cp evaluate on this ONNX model against a plain onnxruntime loop "
                             "(Pillow decode, batches of 32, 2 intra-op threads) over the same 224 images, for each "
                             "--workers (default 1,2), and print the ratio")
    parser.add_argument("--evaluate-images", type=int, default=640,
                        help="with --evaluate: images of the timed release (default 640)")
    parser.add_argument("--full-size", action="store_true",
                        help="instead: the full-size run: make an input of the edition (ImageNet's validation "
                             "layout, or a CIFAR-10 test set for cifar) or read --input, then for each --sizes "
                             "(default 5000,20000,50000) build --configs, kill the build half way and rerun it, "
                             "verify, package, publish and (with --model) evaluate the first --evaluated-configs, "
                             "killed once and rerun; wall, CPU, peak memory and disk of every step")
    parser.add_argument("--benchmark", choices=("c", "p"), default="c",
                        help="with --full-size: build-c (ImageNet-C, default) or build-p (ImageNet-P)")
    parser.add_argument("--edition", default=DEFAULT_EDITION, choices=tuple(EDITIONS),
                        help=f"with --full-size: the edition built (default {DEFAULT_EDITION})")
    parser.add_argument("--configs", choices=CONFIG_CHOICES, default="ten",
                        help="with --full-size: 'ten' (default; ImageNet-C: the clean config and 9 corruptions at "
                             "severity 3, ImageNet-P: the 10 test perturbations at difficulty 1) or 'all' (every "
                             "config of the edition: 96 for ImageNet-C)")
    parser.add_argument("--evaluated-configs", type=int, default=EVALUATED_CONFIGS,
                        help=f"with --full-size and --model: how many configs evaluate predicts, the first in "
                             f"release order (default {EVALUATED_CONFIGS})")
    parser.add_argument("--formats", help="with --full-size: the builds' comma-separated output formats (default: "
                                          "the build's, tree,tfds); --formats tree halves a whole release's disk")
    parser.add_argument("--input", help="with --full-size: a real input of the edition (an ImageNet validation "
                                        "folder or tar, a CIFAR folder)")
    parser.add_argument("--model", help="with --full-size: the ONNX model evaluate runs, of the edition's input "
                                        "size (imagenet-cp fetch-model efficientnet-lite0); without it evaluate is "
                                        "left out")
    parser.add_argument("--scratch", help="with --full-size: the folder to work in, kept afterwards (default: a "
                                          "new folder under TMPDIR, removed)")
    parser.add_argument("--webdataset", metavar="RELEASE",
                        help="instead: time writing the WebDataset shards of a built release's configs (what "
                             "webdataset among --formats adds to a build), into a scratch folder")


def _scaling_command(args) -> int:
    from pipelines.bench.scaling import SCALING_SIZES, SCALING_WORKERS, format_scaling_table, run_scaling
    from schemas.configs import ImageNetCConfig

    modes = args.rng.split(",") if args.rng else ["reference"]
    try:
        if len(modes) != 1:
            raise ValueError(f"--scaling builds in one rng mode, got {args.rng!r}")
        # the corruption conditions only (no clean config), as docs/dev/performance.md's figures were measured
        config = ImageNetCConfig.select(args.corruptions.split(",") if args.corruptions else None, rng=modes[0],
                                        clean=False)
        result = run_scaling(SCALING_SIZES if args.sizes is None else args.sizes,
                             SCALING_WORKERS if args.workers is None else args.workers, config,
                             resume=args.resume)
    except ValueError as err:
        print(f"imagenet-cp bench: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else format_scaling_table(result))
    return 0


def _webdataset_command(args) -> int:
    from pipelines.bench.webdataset import format_webdataset_table, measure_webdataset

    try:
        result = measure_webdataset(args.webdataset, repeats=args.repeats)
    except (ValueError, OSError) as err:
        print(f"imagenet-cp bench: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else format_webdataset_table(result))
    return 0


def _full_size_command(args) -> int:
    from pipelines.bench.full_size import FULL_SIZE_SIZES, FullSizePlan, format_full_size_table, run_full_size

    try:
        if args.workers is not None and len(args.workers) != 1:
            raise ValueError(f"--full-size runs with one worker count, got {','.join(map(str, args.workers))}")
        plan = FullSizePlan(args.benchmark, args.edition, args.configs, args.evaluated_configs,
                            tuple(args.formats.split(",")) if args.formats else ())
        sizes = [size for size in FULL_SIZE_SIZES if size <= plan.whole[0]] if args.sizes is None else args.sizes
        result = run_full_size(sizes, args.input, args.workers[0] if args.workers else os.cpu_count() or 1,
                               args.model, args.scratch, keep=args.scratch is not None, plan=plan)
    except (ValueError, RuntimeError) as err:
        print(f"imagenet-cp bench: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else format_full_size_table(result))
    return 0


def run(args) -> int:
    if args.scaling:
        return _scaling_command(args)
    if args.full_size:
        return _full_size_command(args)
    if args.evaluate:
        from pipelines.bench.evaluate import EVALUATE_WORKERS, format_evaluate_table, run_evaluate_bench

        try:
            result = run_evaluate_bench(args.evaluate, args.evaluate_images, args.workers or EVALUATE_WORKERS)
        except ValueError as err:
            print(f"imagenet-cp bench: {err}", file=sys.stderr)
            return 2
        print(json.dumps(result, indent=2) if args.json else format_evaluate_table(result))
        return 0
    if args.webdataset:
        return _webdataset_command(args)
    from pipelines.bench.corruptions import format_table, run_bench
    from schemas.imagenet_c import select_corruptions
    from schemas.imagenet_p import select_perturbations
    from pipelines.bench.perturbations import format_p_table, run_p_bench
    from pipelines.formats.video import PRESETS
    from pipelines.bench.editions import format_editions_table, run_editions_bench, select_editions

    names = args.corruptions.split(",") if args.corruptions else None
    perturbations = args.perturbations.split(",") if args.perturbations else None
    try:  # check every selection before the first timing
        select_corruptions(names)
        select_perturbations(perturbations)
        if args.preset not in PRESETS:
            raise ValueError(f"unknown x264 preset {args.preset!r}; valid presets: {', '.join(PRESETS)}")
        editions = None if args.editions is None else [] if args.editions == "none" else args.editions.split(",")
        if editions != []:
            select_editions(editions)
        result = run_bench(names, images=args.images, repeats=args.repeats,
                           rng_modes=args.rng.split(",") if args.rng else None, clock=args.clock)
        if editions != []:
            result["editions"] = run_editions_bench(names, editions, images=args.images, repeats=args.repeats,
                                                    clock=args.clock)
        if perturbations or not names:
            result["imagenet_p"] = run_p_bench(perturbations, images=args.images, repeats=args.repeats,
                                               preset=args.preset)
    except ValueError as err:
        print(f"imagenet-cp bench: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(format_table(result))
        if "editions" in result:
            print("\n" + format_editions_table(result["editions"]))
        if "imagenet_p" in result:
            print("\n" + format_p_table(result["imagenet_p"]))
    return 0
