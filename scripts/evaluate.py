"""``imagenet-cp evaluate``: run a model over a built release and write predictions, metrics, report."""
import argparse
import sys

from scripts import evaluate_vcr
from scripts.build_options import add_beam_arguments

__all__ = ["NAME", "HELP", "add_arguments", "check", "run"]

NAME = "evaluate"
HELP = ("run a model (ONNX; TorchScript or TensorFlow when installed) over a release's ImageNet-C / "
        "ImageNet-P data with Beam RunInference; write predictions, metrics.json and report.md")


def add_arguments(parser):
    parser.add_argument("--release", required=True,
                        help="release directory (holds ImageNet-C/, ImageNet-P/ or tfds/, or an edition's tree: "
                             "CIFAR-10-C/, CIFAR-100-C/, Tiny-ImageNet-C/, ImageNet-64x64-C/, ImageNet-C-299/), "
                             "or a packaged ImageNet-A or ImageNet-O set (imagenet-a/ or imagenet-o/, from package-a / "
                             "package-o)")
    parser.add_argument("--in-distribution",
                        help="ImageNet-O only: an ImageNet val folder or tar, or a release with a clean config; its "
                             "images of the 200 ImageNet-O classes are the negatives of AUPR, AUROC and FPR95")
    parser.add_argument("--model", required=True,
                        help=".onnx, TorchScript .pt/.pth, or Keras/SavedModel path")
    parser.add_argument("--framework", choices=("onnx", "pytorch", "tensorflow"),
                        help="model framework (default: from the model's file name)")
    parser.add_argument("--output", help="output folder (default: RELEASE-evaluations/<model name>)")
    parser.add_argument("--configs", help="comma-separated ImageNet-C configs (clean, fog_3) and ImageNet-P sets "
                                          "(rotate, gaussian_noise_2) to evaluate (default: all the release holds)")
    parser.add_argument("--source", choices=("auto", "tree", "tfds"), default="auto",
                        help="ImageNet-C input: the JPEG tree or the TFDS records (default: tree if present)")
    parser.add_argument("--clean-error", type=float,
                        help="the model's clean top-1 error (fraction), for Relative CE (default: measured on the "
                             "release's clean config; this value overrides it, and the report says which was used)")
    parser.add_argument("--baseline",
                        help="errors JSON of the ImageNet-C normalising model (default: AlexNet)")
    parser.add_argument("--flip-baseline", help="ImageNet-P baseline: JSON or the baseline model's NPZ "
                                                "(see imagenet-cp metrics)")
    parser.add_argument("--batch-size", type=int, default=32, help="largest inference batch (default 32)")
    parser.add_argument("--workers", type=int, help="local workers, threads of this process (default: all cores)")
    parser.add_argument("--force", action="store_true",
                        help="discard the predictions an interrupted evaluation of another model, release or "
                             "source left in --output, instead of refusing (the same evaluation always resumes)")
    parser.add_argument("--verbose", action="store_true",
                        help="end with a line of each step's seconds (imports, checks, to the first prediction, "
                             "predictions, files and report, shutdown, total)")
    evaluate_vcr.add_arguments(parser)
    add_beam_arguments(parser, "after '--': Beam pipeline options, e.g. -- --runner=DataflowRunner ...")


def check(args) -> None:
    """The paths and numbers, before Beam (and a model runtime) is imported."""
    import os

    for option, path in (("--release", args.release), ("--model", args.model), ("--baseline", args.baseline),
                         ("--flip-baseline", args.flip_baseline), ("--in-distribution", args.in_distribution)):
        if path is not None and "://" not in path and not os.path.exists(path):
            raise ValueError(f"{option} {path}: no such file or folder")
    for option, value in (("--batch-size", args.batch_size), ("--workers", args.workers)):
        if value is not None and value < 1:
            raise ValueError(f"{option} must be >= 1, got {value}")
    if args.clean_error is not None and not 0 <= args.clean_error <= 1:
        raise ValueError(f"--clean-error must be a fraction in [0, 1], got {args.clean_error}")


def run(args) -> int:
    import time

    started = time.time()
    try:
        check(args)
    except ValueError as err:
        print(f"imagenet-cp evaluate: {err}", file=sys.stderr)
        return 2
    from pipelines.formats import storage

    storage.configure([a for a in args.beam_args if a != "--"])  # the release may lie on an object store
    code = evaluate_vcr.dispatch(args)
    if code is not None:
        return code
    from pipelines.beam.evaluate import evaluate_release
    from pipelines.beam.inference import Model
    from pipelines.beam.runner import RunOptions
    from pipelines.evaluation.scores import METRICS_FILE, ScoreBaselines
    from pipelines.evaluation.metrics_files import load_error_baseline, load_flip_baseline
    from pipelines.evaluation.report import summary_lines
    from pipelines.formats.json_files import parse_json
    from pipelines.beam.shutdown import BuildInterrupted, BuildStopped

    import contextlib
    import os
    import tempfile

    from scripts.build_options import logging_verbose
    from scripts.errors import WorkerStderr

    # the workers' stderr and the runner's log of a failed job go to a log file, as for a build
    quiet = sys.stderr is sys.__stderr__ and not logging_verbose()
    log = WorkerStderr(os.path.join(tempfile.gettempdir(), f"imagenet-cp-workers-{os.getpid()}.log"))
    try:
        baselines = ScoreBaselines(args.clean_error, load_error_baseline(args.baseline) if args.baseline else None,
                                   load_flip_baseline(args.flip_baseline) if args.flip_baseline else None)
        with log if quiet else contextlib.nullcontext():
            out = evaluate_release(
                args.release, Model(args.model, args.framework, args.batch_size), args.output, args.source,
                baselines, args.in_distribution,
                run=RunOptions(workers=args.workers, beam_args=[a for a in args.beam_args if a != "--"],
                               force=args.force, stream=log.terminal or sys.stderr, verbose=args.verbose,
                               started=started),
                configs=args.configs.split(",") if args.configs is not None else None)
    except (OSError, ValueError, ImportError) as err:
        print(f"imagenet-cp evaluate: {err}", file=sys.stderr)
        return 2
    except BuildInterrupted as err:  # exit 130 (SIGINT) or 143 (SIGTERM): the parts are kept
        print(f"imagenet-cp evaluate: {err}", file=sys.stderr)
        return err.exit_code
    except BuildStopped as err:  # a worker died, the disk is full: resumable
        print(f"imagenet-cp evaluate: {err}", file=sys.stderr)
        return err.exit_code
    metrics = storage.join(str(out), METRICS_FILE)
    if storage.exists(metrics):  # a local folder or an object store
        for line in summary_lines(parse_json(storage.read_bytes(metrics), metrics)):
            print(line)
    print(f"wrote {out}/metrics.json and {out}/report.md")
    return 0
