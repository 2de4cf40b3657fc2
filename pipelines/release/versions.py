"""The library versions a release records (``release.json``'s ``library_versions``)."""
from __future__ import annotations

import importlib.metadata
import platform

__all__ = ["library_versions"]


def library_versions() -> dict[str, str]:
    """Versions of everything that can change an output's bytes (and of the build tools)."""
    import apache_beam
    import cv2
    import numba
    import numpy
    import PIL
    import scipy
    import skimage
    from PIL import features

    try:
        own = importlib.metadata.version("imagenet-cp")
    except importlib.metadata.PackageNotFoundError:
        own = "not installed"
    return {"python": platform.python_version(), "imagenet-cp": own, "numpy": numpy.__version__,
            "pillow": PIL.__version__, "libjpeg": str(features.version("jpg")),
            "libjpeg-turbo": str(features.version("libjpeg_turbo")), "scipy": scipy.__version__,
            "scikit-image": skimage.__version__, "opencv": cv2.__version__, "numba": numba.__version__,
            "apache-beam": apache_beam.__version__}
