"""A contact sheet of one image under every corruption and severity, written as a PNG.

One row per corruption (table order), columns clean + severities 1..5, each cell the crop that a
release of the edition would save (``transforms.preprocess`` then ``transforms.corrupt`` with the
per-example RandomState of ``example_seed``; 224x224 by default), labelled with row names and column
headers. Cells of the small editions are enlarged by an integer factor (pixel replication) to at
least :data:`MIN_CELL` pixels, so that 32x32 and 64x64 outputs can be seen.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from schemas.edition import DEFAULT_EDITION
from schemas.editions import get_edition
from schemas.imagenet_c import CORRUPTIONS, IMAGE_SIZE, SEVERITIES, select_corruptions
from transforms import corrupt, example_rng, preprocess

__all__ = ["MIN_CELL", "GAP", "LABEL_WIDTH", "HEADER_HEIGHT", "FONT_SIZE", "COLUMN_HEADERS", "sheet_size",
           "cell_scale", "row_images", "contact_sheet", "write_preview"]

MIN_CELL = 128
"""Smallest cell side (pixels) of a sheet; smaller outputs are enlarged by an integer factor."""


GAP = 4
"""Pixels between cells and around the sheet."""

LABEL_WIDTH = 200
"""Width (pixels) of the left column holding the corruption names."""

HEADER_HEIGHT = 30
"""Height (pixels) of the top row holding the column headers."""

FONT_SIZE = 16
"""Point size of the labels (Pillow's bundled font)."""

COLUMN_HEADERS = ("clean",) + tuple(f"severity {s}" for s in SEVERITIES)


def sheet_size(rows: int, columns: int = len(COLUMN_HEADERS), cell: int = IMAGE_SIZE) -> tuple[int, int]:
    """(width, height) in pixels of a sheet with ``rows`` corruptions, ``columns`` image columns and
    cells of ``cell`` pixels."""
    return (LABEL_WIDTH + columns * (cell + GAP) + GAP,
            HEADER_HEIGHT + rows * (cell + GAP) + GAP)


def cell_scale(side: int) -> int:
    """Integer enlargement of an edition's ``side``-pixel outputs in a sheet (1 for 224 and 299)."""
    return max(1, -(-MIN_CELL // side))


def row_images(clean: np.ndarray, name: str, release_seed: int, image_key: str,
               edition: str = DEFAULT_EDITION) -> list[np.ndarray]:
    """The clean crop followed by corruption ``name`` at severities 1..5 (edition-sized)."""
    return [clean] + [corrupt(clean, name, s, example_rng(release_seed, image_key, name, s), edition=edition)
                      for s in SEVERITIES]


def contact_sheet(image, corruptions: Optional[Sequence[str]] = None, release_seed: int = 0,
                  image_key: str = "preview/image", edition: str = DEFAULT_EDITION) -> Image.Image:
    """Draw the contact sheet of ``image``.

    Parameters
    ----------
    image : PIL.Image.Image, bytes or numpy.ndarray
        Any image :func:`transforms.preprocess` accepts; it is resized and centre-cropped to 224.
    corruptions : sequence of str, optional
        Rows to draw (default: all 19, in table order).
    release_seed : int
        Release seed of the per-example RandomStates.
    image_key : str
        Image key of the per-example seeds (``<wnid>/<file name>`` in a release).
    edition : str
        One of :data:`transforms.EDITIONS` (default ``'imagenet'``, 224).

    Returns
    -------
    PIL.Image.Image
        RGB, of size :func:`sheet_size` ``(len(corruptions), cell=side * cell_scale(side))``.
    """
    names = select_corruptions(corruptions)
    clean = preprocess(image, edition=edition)
    side = get_edition(edition).image_size
    scale = cell_scale(side)
    cell_side = side * scale
    sheet = Image.new("RGB", sheet_size(len(names), cell=cell_side), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=FONT_SIZE)
    for column, header in enumerate(COLUMN_HEADERS):
        centre = LABEL_WIDTH + column * (cell_side + GAP) + cell_side // 2
        draw.text((centre, HEADER_HEIGHT // 2), header, fill="black", font=font, anchor="mm")
    for row, name in enumerate(names):
        top = HEADER_HEIGHT + row * (cell_side + GAP)
        label = name if CORRUPTIONS[name].is_benchmark else f"{name} (extra)"
        draw.text((GAP, top + cell_side // 2), label, fill="black", font=font, anchor="lm")
        for column, cell in enumerate(row_images(clean, name, release_seed, image_key, edition)):
            cell = np.repeat(np.repeat(cell, scale, axis=0), scale, axis=1)
            sheet.paste(Image.fromarray(cell), (LABEL_WIDTH + column * (cell_side + GAP), top))
    return sheet


def write_preview(source: Path, output: Path, corruptions: Optional[Sequence[str]] = None,
                  release_seed: int = 0, edition: str = DEFAULT_EDITION) -> Path:
    """Write the contact sheet of the image file ``source`` to ``output`` as PNG; return ``output``.

    The per-example seeds use the image key ``preview/<source file name>``.
    """
    source, output = Path(source), Path(output)
    sheet = contact_sheet(source.read_bytes(), corruptions, release_seed, f"preview/{source.name}", edition)
    output.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(output, format="PNG")
    return output
