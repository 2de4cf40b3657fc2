"""``imagenet-cp verify DIR``: recompute every hash of a release; non-zero exit on any problem."""
from scripts.build_options import add_beam_arguments

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "verify"
HELP = ("recompute every SHA-256 of a release and read its TFDS records, videos and WebDataset shards against the "
        "manifests; report missing, extra and changed files (exit 1 on any) and print the release digest")


def add_arguments(parser):
    parser.add_argument("release", help="release directory (as written by build-c)")
    parser.add_argument("--threads", type=int, help="hashing threads (default: one per core)")
    add_beam_arguments(parser, "after '--': file-system options for a release on an object store, "
                               "e.g. -- --s3_endpoint_url=URL --s3_region_name=REGION")


def run(args) -> int:
    from pipelines.formats import storage
    from pipelines.release.verify import verify_release

    storage.configure([a for a in args.beam_args if a != "--"])
    from scripts.release_digest import print_release_digest

    report = verify_release(args.release, args.threads)
    print(report.text())
    print_release_digest(args.release)
    return 0 if report.ok else 1
