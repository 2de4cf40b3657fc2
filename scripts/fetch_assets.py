"""``imagenet-cp fetch-assets``: get the frost textures and verify their SHA-256."""
from pathlib import Path

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "fetch-assets"
HELP = "fetch the six frost textures (default: from the imagecorruptions==1.1.2 wheel) and verify them"


def add_arguments(parser):
    parser.add_argument("--source", help="directory, wheel/zip file or URL holding frost1.png ... frost6.jpg")
    parser.add_argument("--dest", type=Path, help="target directory (default: transforms/_assets/frost)")


def run(args) -> int:
    from pipelines.install.assets import fetch_frost
    from transforms.assets import PACKAGE_FROST_DIR

    dest = fetch_frost(args.source, args.dest or PACKAGE_FROST_DIR)
    print(f"frost textures verified in {dest}")
    return 0
