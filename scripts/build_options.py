"""Options and exit codes that ``build-c`` and ``build-p`` share (inputs, output, workers, Beam)."""
import argparse
import sys

__all__ = ["names", "ints", "add_beam_arguments", "add_source_arguments", "add_output_arguments",
           "add_format_arguments", "check_source_arguments", "print_failures", "run_build", "logging_verbose"]


def names(text):
    """argparse type: ``a,b`` -> ``['a', 'b']``."""
    return [part for part in text.split(",") if part]


def ints(text):
    """argparse type: ``1,3`` -> ``[1, 3]``."""
    try:
        return [int(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def add_beam_arguments(parser, text: str):
    """Document the options after ``--`` (``imagenet-cp`` hands them over as ``args.beam_args``).

    They are not an argparse ``REMAINDER``: one after a positional would swallow the options
    that follow it (``package DIR --output X``)."""
    parser.set_defaults(beam_args=[])
    parser.epilog = f"{parser.epilog}\n{text}" if parser.epilog else text


def add_source_arguments(parser):
    """--input, --output, --workers, --limit, --image-ids, --seed."""
    parser.add_argument("--input", help="ImageNet val folder (<wnid>/<file> or flat), ILSVRC2012_img_val.tar, "
                        "or a prepared TFDS imagenet2012 folder (default: the bundled sample)")
    parser.add_argument("--output", required=True, help="release directory")
    parser.add_argument("--workers", type=int, help="local worker processes (default: all cores)")
    parser.add_argument("--limit", type=int, help="only the first N images in key order")
    from schemas.image_ids import ID_LISTS

    parser.add_argument("--image-ids", help="file of <wnid>/<file> or <file> lines to keep, or the name of a bundled "
                        f"list ({', '.join(ID_LISTS)}; robustbench-5000 is RobustBench's 5,000 ImageNet-C test images)")
    parser.add_argument("--force", action="store_true",
                        help="replace a release or unfinished build of another config or input in --output (only "
                             "the release's own files and folders are removed)")
    parser.add_argument("--seed", "--release-seed", dest="seed", type=int, default=0,
                        help="release seed of the per-example seeds (default 0)")


def add_output_arguments(parser, shard_help: str):
    """--examples-per-shard and the Beam options after ``--``."""
    parser.add_argument("--examples-per-shard", type=int, default=None, help=shard_help)
    parser.add_argument("--commit-every", type=int, default=None, metavar="N",
                        help="each worker commits its work every N outputs (default 10000) or 120 s, whichever "
                             "comes first: a worker lost mid-run loses at most that much")
    parser.add_argument("--stall-minutes", type=float, default=None, metavar="M",
                        help="with a runner named after '--': stop the job when no part was committed for M "
                             "minutes (default 30; 0: never), as a worker host lost without the runner noticing "
                             "would leave it waiting for ever; a rerun resumes")
    add_beam_arguments(parser, "after '--': Beam pipeline options, e.g. -- --runner=DataflowRunner --project=P "
                               "--region=R --temp_location=gs://B/tmp --setup_file=./setup.py")


def add_format_arguments(parser):
    """--formats: the output formats a release holds beside its manifests, each with its own words
    (:func:`pipelines.formats.release_formats.formats_help`; that module imports no Beam)."""
    from pipelines.formats.release_formats import formats_help

    parser.add_argument("--formats", type=names, default=None, help=formats_help())


def check_source_arguments(args) -> None:
    """Check the options every build shares, and that the input exists, before Beam is imported.

    Raises
    ------
    ValueError
        On a bad option value or a missing input (the message names it).
    """
    import os

    for option, least in (("--workers", 1), ("--limit", 0), ("--examples-per-shard", 1), ("--seed", 0),
                          ("--commit-every", 1), ("--stall-minutes", 0)):
        value = getattr(args, option[2:].replace("-", "_"), None)
        if value is not None and value < least:
            raise ValueError(f"{option} must be >= {least}, got {value}")
    from schemas.image_ids import is_named_id_list

    ids = None if args.image_ids is None or is_named_id_list(args.image_ids) else args.image_ids
    for option, path in (("--input", args.input), ("--image-ids", ids)):
        if path is not None and "://" not in path and not os.path.exists(path):
            raise ValueError(f"{option} {path}: no such file or folder")
    if ids is not None and "://" not in ids and not os.path.isfile(ids):
        raise ValueError(f"--image-ids {ids}: not a file")
    if "://" not in args.output and os.path.isfile(args.output):
        raise ValueError(f"--output {args.output} is a file; give a release folder")


def print_failures(failures, stream, limit: int = 50) -> None:
    """The first ``limit`` failures as ``<key>: <reason>`` lines."""
    for failure in failures[:limit]:
        record = failure.to_json()
        print(f"  {record['key']}: {record['reason']}", file=stream)
    if len(failures) > limit:
        print(f"  ... and {len(failures) - limit} more", file=stream)


def run_build(args, build, config_from_args, errors=(ValueError,)) -> int:
    """Run ``build(output, selection, config, run, ...)``; exit 2 on a bad option or input, 1 if any input
    failed (or none can be built: the failures are listed, no release is written).

    :func:`check_source_arguments` and ``config_from_args(args)`` (a config of :mod:`schemas.configs`,
    validated where it is made) run before ``pipelines`` (and so Beam) is imported. Without
    ``--examples-per-shard`` the benchmark's own default applies.
    """
    import contextlib
    import os
    import tempfile

    from scripts.errors import WorkerStderr, describe

    try:
        check_source_arguments(args)
        config = config_from_args(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from pipelines.beam.build import SourceSelection
    from pipelines.beam.runner import RunOptions
    from pipelines.beam.shutdown import BuildInterrupted, BuildStopped
    from pipelines.inputs.listing import NoUsableImages

    options = {"examples_per_shard": args.examples_per_shard}
    if getattr(args, "formats", None) is not None:
        options["formats"] = args.formats
    quiet = sys.stderr is sys.__stderr__ and not logging_verbose()
    log = WorkerStderr(os.path.join(tempfile.gettempdir(), f"imagenet-cp-workers-{os.getpid()}.log"))
    try:
        with log if quiet else contextlib.nullcontext():
            limits = {"part_records": args.commit_every} if getattr(args, "commit_every", None) else {}
            if getattr(args, "stall_minutes", None) is not None:
                limits["stall_seconds"] = args.stall_minutes * 60
            run = RunOptions(workers=args.workers, beam_args=[a for a in args.beam_args if a != "--"],
                             stream=log.terminal or sys.stderr, force=args.force, **limits)
            result = build(args.output, SourceSelection(args.input, args.image_ids, args.limit), config, run,
                           **options)
    except NoUsableImages as err:
        print(f"error: {err}:", file=sys.stderr)
        print_failures(err.failures, sys.stderr)
        return 1
    except errors as err:
        print(f"error: {describe(err)}", file=sys.stderr)
        return 2
    except BuildInterrupted as err:  # exit 130 (SIGINT) or 143 (SIGTERM)
        print(err, file=sys.stderr)
        return err.exit_code
    except BuildStopped as err:  # a worker died, the disk is full: resumable
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except Exception as err:
        if logging_verbose():  # --debug: the traceback
            raise
        logged = quiet and os.path.exists(log.path) and os.path.getsize(log.path) > 0
        if quiet and os.path.exists(log.path) and not logged:
            os.remove(log.path)
        where = f" (worker log: {log.path})" if logged else ""
        from pipelines.beam.runner import is_local
        from pipelines.beam.shutdown import RESUME_HINT

        # a job that failed elsewhere (a runner's error, a network's) leaves its committed parts
        resume = "" if is_local([a for a in args.beam_args if a != "--"]) else f"; {RESUME_HINT}"
        print(f"error: building {args.output}: {describe(err)}{where}{resume}", file=sys.stderr)
        return 1
    print(result.summary(args.output))
    return 1 if result.failures else 0


def logging_verbose() -> bool:
    """True when ``--debug`` asked for the libraries' log lines (the root logger is at INFO)."""
    import logging

    return logging.getLogger().getEffectiveLevel() <= logging.INFO

