"""A contact sheet of one image under every corruption and severity, written as a PNG.

One row per corruption (table order), columns clean + severities 1..5, each cell the 224x224 crop
that a release would JPEG-encode (``transforms.preprocess`` then ``transforms.corrupt`` with the
per-example RandomState of ``example_seed``), labelled with row names and column headers.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from schemas.imagenet_c import CORRUPTIONS, IMAGE_SIZE, SEVERITIES, select_corruptions
from transforms import corrupt, example_rng, preprocess


GAP = 4
"""Pixels between cells and around the sheet."""

LABEL_WIDTH = 200
"""Width (pixels) of the left column holding the corruption names."""

HEADER_HEIGHT = 30
"""Height (pixels) of the top row holding the column headers."""

FONT_SIZE = 16
"""Point size of the labels (Pillow's bundled font)."""

COLUMN_HEADERS = ("clean",) + tuple(f"severity {s}" for s in SEVERITIES)


def sheet_size(rows: int, columns: int = len(COLUMN_HEADERS)) -> tuple[int, int]:
    """(width, height) in pixels of a sheet with ``rows`` corruptions and ``columns`` image columns."""
    return (LABEL_WIDTH + columns * (IMAGE_SIZE + GAP) + GAP,
            HEADER_HEIGHT + rows * (IMAGE_SIZE + GAP) + GAP)


def row_images(clean: np.ndarray, name: str, release_seed: int, image_key: str) -> list[np.ndarray]:
    """The clean 224x224 crop followed by corruption ``name`` at severities 1..5."""
    return [clean] + [corrupt(clean, name, s, example_rng(release_seed, image_key, name, s))
                      for s in SEVERITIES]


def contact_sheet(image, corruptions: Optional[Sequence[str]] = None, release_seed: int = 0,
                  image_key: str = "preview/image") -> Image.Image:
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

    Returns
    -------
    PIL.Image.Image
        RGB, of size :func:`sheet_size` ``(len(corruptions))``.
    """
    names = select_corruptions(corruptions)
    clean = preprocess(image)
    sheet = Image.new("RGB", sheet_size(len(names)), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=FONT_SIZE)
    for column, header in enumerate(COLUMN_HEADERS):
        centre = LABEL_WIDTH + column * (IMAGE_SIZE + GAP) + IMAGE_SIZE // 2
        draw.text((centre, HEADER_HEIGHT // 2), header, fill="black", font=font, anchor="mm")
    for row, name in enumerate(names):
        top = HEADER_HEIGHT + row * (IMAGE_SIZE + GAP)
        label = name if CORRUPTIONS[name].is_benchmark else f"{name} (extra)"
        draw.text((GAP, top + IMAGE_SIZE // 2), label, fill="black", font=font, anchor="lm")
        for column, cell in enumerate(row_images(clean, name, release_seed, image_key)):
            sheet.paste(Image.fromarray(cell), (LABEL_WIDTH + column * (IMAGE_SIZE + GAP), top))
    return sheet


def write_preview(source: Path, output: Path, corruptions: Optional[Sequence[str]] = None,
                  release_seed: int = 0) -> Path:
    """Write the contact sheet of the image file ``source`` to ``output`` as PNG; return ``output``.

    The per-example seeds use the image key ``preview/<source file name>``.
    """
    source, output = Path(source), Path(output)
    sheet = contact_sheet(source.read_bytes(), corruptions, release_seed, f"preview/{source.name}")
    output.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(output, format="PNG")
    return output
