"""``imagenet-cp package DIR``: the official category tars of a release and their SHA-256 list."""
import sys

NAME = "package"
HELP = "pack a release's tree into the official category tars (noise.tar, blur.tar, ...) plus SHA256SUMS"


def add_arguments(parser):
    parser.add_argument("release", help="release directory (as written by build-c)")
    parser.add_argument("--output", help="where the tars go (default: RELEASE/packages)")


def run(args) -> int:
    from pipelines.package import package_release

    try:
        written = package_release(args.release, args.output)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0
