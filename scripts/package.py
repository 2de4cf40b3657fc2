"""``imagenet-cp package DIR``: the official category tars of a release and their SHA-256 list."""
from scripts.build_options import add_beam_arguments
import sys

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "package"
HELP = "pack a release's tree into the official category tars (noise.tar, blur.tar, ...) plus SHA256SUMS"


def add_arguments(parser):
    parser.add_argument("release", help="release directory (as written by build-c)")
    parser.add_argument("--output", help="where the tars go (default: RELEASE/packages)")
    add_beam_arguments(parser, "after '--': file-system options for a release on an object store, "
                               "e.g. -- --s3_endpoint_url=URL --s3_region_name=REGION")


def run(args) -> int:
    from pipelines.formats import storage
    from pipelines.release.package import package_release
    from pipelines.release.publish import check_package_output
    from scripts.release_digest import print_release_digest

    storage.configure([a for a in args.beam_args if a != "--"])
    try:
        check_package_output(args.release, args.output)
        written = package_release(args.release, args.output)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print_release_digest(args.release)
    return 0
