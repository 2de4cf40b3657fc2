"""``imagenet-cp verify DIR``: recompute every hash of a release; non-zero exit on any problem."""
NAME = "verify"
HELP = "recompute every SHA-256 of a release; report missing, extra and changed files (exit 1 on any)"


def add_arguments(parser):
    parser.add_argument("release", help="release directory (as written by build-c)")
    parser.add_argument("--threads", type=int, help="hashing threads (default: one per core)")


def run(args) -> int:
    from pipelines.verify import verify_release

    report = verify_release(args.release, args.threads)
    print(report.text())
    return 0 if report.ok else 1
