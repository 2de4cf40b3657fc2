"""Options and exit codes that ``build-c`` and ``build-p`` share (inputs, output, workers, Beam)."""
import argparse
import sys


def names(text):
    """argparse type: ``a,b`` -> ``['a', 'b']``."""
    return [part for part in text.split(",") if part]


def ints(text):
    """argparse type: ``1,3`` -> ``[1, 3]``."""
    try:
        return [int(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


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
    parser.add_argument("beam_args", nargs=argparse.REMAINDER,
                        help="after '--': Beam pipeline options, e.g. -- --runner=DataflowRunner --project=P "
                             "--region=R --temp_location=gs://B/tmp --setup_file=./setup.py")


def run_build(args, build, config_from_args, default_examples_per_shard: int, errors=(ValueError,)) -> int:
    """Run ``build(output, selection, config, ...)``; exit 2 on a bad option, 1 if any input failed."""
    from pipelines.build import SourceSelection
    from pipelines.shutdown import BuildInterrupted, BuildStopped

    try:
        result = build(args.output, SourceSelection(args.input, args.image_ids, args.limit), config_from_args(args),
                       workers=args.workers, beam_args=[a for a in args.beam_args if a != "--"],
                       examples_per_shard=args.examples_per_shard or default_examples_per_shard, force=args.force)
    except errors as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BuildInterrupted as err:  # exit 130 (SIGINT) or 143 (SIGTERM)
        print(err, file=sys.stderr)
        return err.exit_code
    except BuildStopped as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    print(result.summary(args.output))
    return 1 if result.failures else 0
