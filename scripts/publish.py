"""``imagenet-cp publish DIR``: the dataset card and the Croissant file of an existing release."""
import sys

from scripts.build_options import add_beam_arguments

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "publish"
HELP = ("write a release's dataset card (README.md, Hugging Face front matter), croissant.json and the Hugging Face "
        "index from its release.json and manifests, list them in SHA256SUMS and print the release digest")


def add_arguments(parser):
    parser.add_argument("release", help="a built release directory (it must pass verify)")
    add_beam_arguments(parser, "after '--': file-system options for a release on an object store, "
                               "e.g. -- --s3_endpoint_url=URL --s3_region_name=REGION")


def run(args) -> int:
    from pipelines.formats import storage
    from pipelines.release.publish import publish_release
    from scripts.release_digest import print_release_digest

    storage.configure([a for a in args.beam_args if a != "--"])
    try:
        written = publish_release(args.release)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(storage.join(args.release, path))
    print_release_digest(args.release)
    return 0
