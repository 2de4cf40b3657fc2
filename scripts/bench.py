"""``imagenet-cp bench``: milliseconds per image for every corruption, decode and encode."""
import json
import sys

NAME = "bench"
HELP = "time every corruption at every severity on real photographs, plus JPEG decode and encode"


def add_arguments(parser):
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls per measurement; the median is kept")
    parser.add_argument("--images", type=int, default=5, help="how many photographs to average over (1..5)")
    parser.add_argument("--corruptions", help="comma-separated names to time (default: all 19)")


def run(args) -> int:
    from pipelines.bench import format_table, run_bench

    names = args.corruptions.split(",") if args.corruptions else None
    try:
        result = run_bench(names, images=args.images, repeats=args.repeats)
    except ValueError as err:
        print(f"imagenet-cp bench: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else format_table(result))
    return 0
