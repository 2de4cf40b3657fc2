"""``imagenet-cp preview``: a contact sheet of one image under every corruption and severity."""
import sys
from pathlib import Path

__all__ = ["NAME", "CORRUPTS_IMAGES", "HELP", "add_arguments", "run"]

NAME = "preview"
CORRUPTS_IMAGES = True

HELP = "draw one image under every corruption (rows) at severities 1..5 (columns) as a PNG"


def add_arguments(parser):
    parser.add_argument("image", type=Path, help="any image file Pillow reads")
    parser.add_argument("-o", "--output", type=Path, required=True, help="PNG file to write")
    parser.add_argument("--corruptions", help="comma-separated names to draw (default: all 19)")
    parser.add_argument("--release-seed", type=int, default=0, help="release seed of the per-example seeds")
    from schemas.editions import DEFAULT_EDITION, EDITIONS

    parser.add_argument("--edition", default=DEFAULT_EDITION,
                        help=f"edition: {', '.join(EDITIONS)} (default {DEFAULT_EDITION})")


def run(args) -> int:
    from pipelines.bench.preview import write_preview

    names = args.corruptions.split(",") if args.corruptions else None
    try:
        path = write_preview(args.image, args.output, names, args.release_seed, args.edition)
    except (OSError, ValueError) as err:
        print(f"imagenet-cp preview: {err}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0
