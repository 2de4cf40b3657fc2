"""Decoding, each edition's preprocessing recipe (224: torchvision-0.2-style Resize(256) +
CenterCrop(224)), and the release JPEG encoder.

The recipes of ImageNet-C, ImageNet-P and the other editions are described in
``docs/reference/algorithms.md``, "Preprocessing".

An input that cannot become an image raises :class:`BadInput` (a ``ValueError``): a build records it
in ``failures.jsonl`` and goes on. Any other exception of a transform is a bug and stops the build.
"""
from __future__ import annotations

import io
from typing import Optional, Union

import numpy as np
from PIL import Image, UnidentifiedImageError

from schemas.edition import DEFAULT_EDITION, Preprocessing
from schemas.editions import get_edition
from schemas.editions.imagenet import RESIZE_SHORT_SIDE as RESIZE_256
from schemas.imagenet_c import IMAGE_SIZE

__all__ = ["BadInput", "RESIZE_SHORT_SIDE", "JPEG_QUALITY", "MAX_PIXELS", "HIGH_DEPTH_MODES", "ImageLike",
           "to_8bit", "to_pil", "resized_size", "check_pixels", "resize_short_side", "center_crop_box", "center_crop",
           "center_crop_fraction", "center_square", "STEPS", "apply_recipe", "preprocess", "preprocess_uncropped",
           "encode_jpeg", "encode_png"]

RESIZE_SHORT_SIDE = RESIZE_256
"""Short side (pixels) of torchvision's ``Resize(256)`` used before the 224 crops (C and P)."""

JPEG_QUALITY = get_edition(DEFAULT_EDITION).c.jpeg_quality
"""Quality of the JPEGs the reference driver writes (``save(quality=85, optimize=True)``)."""

MAX_PIXELS = 89_478_485
"""Most pixels an input may hold, and most its ``Resize(256)`` may make: Pillow's default
``MAX_IMAGE_PIXELS`` (a 9,459 x 9,459 image, 256 MB as RGB), stated here so that a change of
Pillow's setting changes nothing.

Both counts are checked from the header, before anything is decoded or resized: a 1 x 20000 PNG of
164 bytes would otherwise become a 256 x 5,120,000 image (3.9 GB), while a 3 x 3000 strip
(256 x 256,000 after the resize) is read as the reference reads it."""

HIGH_DEPTH_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")
"""Pillow modes of 16-bit, 32-bit integer and float greyscale images, scaled to 8 bits by :func:`to_8bit`."""

ImageLike = Union[Image.Image, bytes, bytearray, np.ndarray]


class BadInput(ValueError):
    """The input data cannot make an output: bytes no decoder reads (truncated, a decompression
    bomb, a format Pillow does not implement), a high-depth image no scale shows faithfully, or a
    size beyond the bounds (:data:`MAX_PIXELS`).

    A build turns it into a row of ``failures.jsonl`` and goes on; every other exception, a
    ``TypeError`` or a plain ``ValueError`` in a transform or a writer, is a bug and stops the build.
    """


def _decode_error(err: BaseException) -> BadInput:
    """A BadInput whose message names the decoder's problem without object reprs (reproducible)."""
    if isinstance(err, UnidentifiedImageError):  # its message holds a memory address
        return BadInput("cannot decode image: not in any format Pillow reads")
    text = str(err).strip()
    return BadInput(f"cannot decode image: {type(err).__name__}" + (f": {text}" if text else ""))


def to_8bit(image: Image.Image) -> Image.Image:
    """Scale a 16-bit, 32-bit integer or float greyscale image to 8-bit ``L``, as a viewer shows it.

    Integer images are read as 16-bit (0..65535 -> 0..255, rounded); float images as 0.0..1.0
    (-> 0..255, rounded). Every other mode is returned unchanged.

    Raises
    ------
    BadInput
        If a 32-bit integer image holds values outside 0..65535, or a float image values outside
        0..1 or not finite: no scale would show them faithfully.
    """
    if image.mode not in HIGH_DEPTH_MODES:
        return image
    values = np.asarray(image)
    if image.mode == "F":
        if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
            raise BadInput("cannot decode image: float image with values outside 0.0..1.0 "
                             f"(min {float(np.nanmin(values)):g}, max {float(np.nanmax(values)):g})")
        scaled = np.floor(values.astype(np.float64) * 255 + 0.5)
    else:
        if values.min() < 0 or values.max() > 65535:
            raise BadInput(f"cannot decode image: {image.mode} image with values outside 0..65535 "
                             f"(min {int(values.min())}, max {int(values.max())})")
        scaled = (values.astype(np.int64) * 255 + 32767) // 65535
    return Image.fromarray(scaled.astype(np.uint8), "L")


def to_pil(image: ImageLike) -> Image.Image:
    """Open ``image`` (PIL image, encoded bytes or uint8 array) as a PIL image, pixels loaded;
    16-bit and float greyscale images are scaled to 8 bits (:func:`to_8bit`).

    Raises
    ------
    BadInput
        If the bytes are not a decodable image (whatever the decoder raised) or a high-depth image
        cannot be scaled.
    ValueError
        If the array is not uint8 HxW or HxWxC, or ``image`` is of another type (the caller's error).
    """
    if isinstance(image, Image.Image):
        return to_8bit(image)
    if isinstance(image, (bytes, bytearray, memoryview)):
        try:
            pil = Image.open(io.BytesIO(bytes(image)))
        except Exception as err:  # any decoder exception (NotImplementedError for some DDS ...)
            raise _decode_error(err) from err
        check_pixels(pil.width, pil.height, None)  # from the header, before the pixels are decoded
        try:
            pil.load()
        except Exception as err:  # any decoder exception (NotImplementedError for some DDS ...)
            raise _decode_error(err) from err
        return to_8bit(pil)
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8 or image.ndim not in (2, 3) or (
                image.ndim == 3 and image.shape[2] not in (1, 3, 4)):
            raise ValueError(
                "array images must be uint8 with shape HxW, HxWx1, HxWx3 or HxWx4; "
                f"got {image.dtype} {image.shape}")
        return Image.fromarray(image[..., 0] if image.ndim == 3 and image.shape[2] == 1 else image)
    raise ValueError(f"expected a PIL image, encoded bytes or a uint8 array, got {type(image)!r}")


def resized_size(width: int, height: int, size: int = RESIZE_SHORT_SIDE) -> tuple[int, int]:
    """``(width, height)`` after torchvision ``Resize(size)``: short side ``size``, long side
    ``int(size * long / short)`` (truncated)."""
    if width <= height:
        return size, int(size * height / width)
    return int(size * width / height), size


def check_pixels(width: int, height: int, size: Optional[int] = RESIZE_SHORT_SIDE) -> None:
    """Refuse an image of more than :data:`MAX_PIXELS` pixels, or whose ``Resize(size)`` would make
    more (from its header size alone, before anything is allocated; ``size=None``: the image only).

    Raises
    ------
    BadInput
        If a side is 0, ``width * height > MAX_PIXELS`` or the resized image's pixels exceed it; the
        message names the size and the limit.
    """
    if width < 1 or height < 1:
        raise BadInput(f"image of {width}x{height} pixels: a side is empty")
    if width * height > MAX_PIXELS:
        raise BadInput(f"image of {width}x{height} pixels: {width * height:,} pixels, above the limit of "
                         f"{MAX_PIXELS:,} pixels")
    if size is not None:
        resized_width, resized_height = resized_size(width, height, size)
        if resized_width * resized_height > MAX_PIXELS:
            raise BadInput(f"image of {width}x{height} pixels: Resize({size}) would make {resized_width:,} x "
                             f"{resized_height:,} = {resized_width * resized_height:,} pixels, above the limit "
                             f"of {MAX_PIXELS:,} pixels")


def resize_short_side(image: Image.Image, size: int = RESIZE_SHORT_SIDE) -> Image.Image:
    """torchvision ``Resize(size)`` with an int size: PIL bilinear, long side truncated.

    The image is returned unchanged when its short side already equals ``size``.

    Raises
    ------
    BadInput
        If the resized image would exceed :data:`MAX_PIXELS` (checked before any resize).
    """
    w, h = image.size
    check_pixels(w, h, size)
    if (w <= h and w == size) or (h <= w and h == size):
        return image
    return image.resize(resized_size(w, h, size), Image.BILINEAR)


def center_crop_box(width: int, height: int, size: int = IMAGE_SIZE) -> tuple[int, int, int, int]:
    """torchvision ``CenterCrop(size)`` box ``(left, top, right, bottom)``.

    Offsets are ``int(round((dim - size) / 2))`` with Python 3's round-half-to-even.
    """
    top = int(round((height - size) / 2.0))
    left = int(round((width - size) / 2.0))
    return left, top, left + size, top + size


def center_crop(image: Union[Image.Image, np.ndarray], size: int = IMAGE_SIZE):
    """torchvision ``CenterCrop(size)`` of a PIL image or an HxW[xC] array (same type back)."""
    if isinstance(image, np.ndarray):
        left, top, right, bottom = center_crop_box(image.shape[1], image.shape[0], size)
        return image[top:bottom, left:right]
    return image.crop(center_crop_box(*image.size, size))


def center_crop_fraction(image: Image.Image, fraction: float) -> Image.Image:
    """The inception driver's crop: ``(int(fraction*H), int(fraction*W))`` at offsets
    ``int(round((H - th) / 2))``, ``int(round((W - tw) / 2))`` (round half to even)."""
    w, h = image.size
    th, tw = int(fraction * h), int(fraction * w)
    top, left = int(round((h - th) / 2.0)), int(round((w - tw) / 2.0))
    return image.crop((left, top, left + tw, top + th))


def center_square(image: Image.Image) -> Image.Image:
    """The centred square of side ``min(H, W)``, offsets ``(dim - side) // 2`` (identity on squares)."""
    w, h = image.size
    side = min(w, h)
    top, left = (h - side) // 2, (w - side) // 2
    return image.crop((left, top, left + side, top + side))


_FILTERS = {"bilinear": Image.BILINEAR, "box": Image.BOX}

#: Operation name of a :class:`schemas.edition.Preprocessing` step -> function(PIL image, *args).
STEPS = {
    "resize_short_side": resize_short_side,
    "center_crop": center_crop,
    "center_crop_fraction": center_crop_fraction,
    "center_square": center_square,
    "resize": lambda image, side, resample: image.resize((side, side), _FILTERS[resample]),
}


def apply_recipe(image: Image.Image, recipe: Preprocessing) -> Image.Image:
    """Apply the steps of ``recipe`` in order to a PIL image."""
    for operation, *arguments in recipe.steps:
        image = STEPS[operation](image, *arguments)
    return image


def preprocess(image: ImageLike, edition: str = DEFAULT_EDITION) -> np.ndarray:
    """ImageNet-C preprocessing of an edition: RGB, then the edition's recipe.

    ``imagenet`` (default): Resize(256), CenterCrop(224). ``inception``: centre 0.875 crop,
    bilinear 299x299. ``imagenet64``: bilinear 64x64 of the whole image. ``tinyimagenet``: centred
    square, bilinear 64x64. ``cifar``: centred square, BOX 32x32 (both identities on the
    datasets' own square images).

    Parameters
    ----------
    image : PIL.Image.Image, bytes or numpy.ndarray
        Any image Pillow reads; greyscale, RGBA, CMYK and palette images become RGB first.
    edition : str
        One of :data:`transforms.EDITIONS`.

    Returns
    -------
    numpy.ndarray
        uint8 array of shape (N, N, 3), N the edition's side, values 0..255.

    Examples
    --------
    >>> import numpy as np, transforms
    >>> photo = np.full((300, 400, 3), 128, dtype=np.uint8)  # any size, any mode Pillow reads
    >>> transforms.preprocess(photo).shape
    (224, 224, 3)
    >>> transforms.preprocess(photo, edition='cifar').shape
    (32, 32, 3)
    >>> transforms.preprocess(photo, edition='inception').shape
    (299, 299, 3)
    >>> transforms.preprocess(photo)[0, 0].tolist()
    [128, 128, 128]
    """
    recipe = get_edition(edition).preprocessing
    rgb = to_pil(image).convert("RGB")
    return np.asarray(apply_recipe(rgb, recipe), dtype=np.uint8).copy()


def preprocess_uncropped(image: ImageLike) -> np.ndarray:
    """ImageNet-P preprocessing: Resize(256) *then* RGB, no crop (the reverse of C's order).

    Returns
    -------
    numpy.ndarray
        uint8 array of shape (H, W, 3) with min(H, W) = 256.

    Examples
    --------
    >>> import numpy as np, transforms
    >>> transforms.preprocess_uncropped(np.zeros((300, 400, 3), dtype=np.uint8)).shape
    (256, 341, 3)
    """
    return np.asarray(resize_short_side(to_pil(image)).convert("RGB"), dtype=np.uint8).copy()


def encode_jpeg(array: np.ndarray, quality: int = JPEG_QUALITY) -> bytes:
    """Encode a uint8 RGB array as the reference driver saves it: Pillow JPEG, q85, optimize.

    Pillow's defaults apply: baseline, 4:2:0 chroma subsampling.

    Examples
    --------
    >>> import numpy as np, transforms
    >>> x = np.arange(32 * 32 * 3, dtype=np.uint8).reshape(32, 32, 3)  # a 32x32 test image
    >>> jpeg = transforms.encode_jpeg(x)
    >>> jpeg[:2].hex(), jpeg == transforms.encode_jpeg(x)  # a JPEG, the same bytes every time
    ('ffd8', True)
    """
    if not (isinstance(array, np.ndarray) and array.dtype == np.uint8 and array.ndim == 3
            and array.shape[2] == 3):
        raise ValueError(f"encode_jpeg expects a uint8 HxWx3 array, got {getattr(array, 'dtype', type(array))} "
                         f"{getattr(array, 'shape', '')}")
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="JPEG", quality=quality, optimize=True)
    return buf.getvalue()


def encode_png(array: np.ndarray) -> bytes:
    """Lossless PNG of a uint8 RGB image (Pillow, default compression).

    The bytes a VCR release stores, a CIFAR build lists its sources as, and the TFDS example of
    an ``.npy`` edition holds.

    Examples
    --------
    >>> import numpy as np, transforms
    >>> from PIL import Image
    >>> x = np.arange(32 * 32 * 3, dtype=np.uint8).reshape(32, 32, 3)
    >>> png = transforms.encode_png(x)
    >>> png[1:4], bool((np.asarray(Image.open(io.BytesIO(png))) == x).all())  # lossless
    (b'PNG', True)
    """
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(array)).save(buffer, format="PNG")
    return buffer.getvalue()
