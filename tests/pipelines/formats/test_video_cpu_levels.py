"""x264's SIMD code in cpu-independent mode gives the plain C code's bytes at every CPU level of this host.

One short real sequence per perturbation family (noise with ``-tune grain``, blur, weather, digital;
4 frames, 64x64 crops) at the release settings (``veryslow``, one thread), encoded with x264 capped
at every ``asm=`` level the host offers, from plain C (``asm=0``) up to its best, and uncapped."""
from __future__ import annotations

import hashlib
import platform

import numpy as np
import pytest
from skimage import data

from pipelines.formats.video import encode_h264, host_cpu_levels, x264_cpu_capabilities
from schemas.imagenet_p import GRAIN_RATE_CONTROL, PERTURBATIONS
from transforms import perturb_sequence, preprocess_uncropped

#: One perturbation per family of the release tars; the noise one uses -tune grain.
FAMILIES = {"noise": "shot_noise", "blur": "motion_blur", "weather": "snow", "digital": "rotate"}
FRAMES, SIZE = 4, 64


@pytest.fixture(scope="module")
def sequences() -> dict:
    image = preprocess_uncropped(data.chelsea())
    out = {}
    for family, name in FAMILIES.items():
        frames = perturb_sequence(image, name, np.random.RandomState(5))[:FRAMES]
        out[name] = np.ascontiguousarray(frames[:, 80:80 + SIZE, 80:80 + SIZE])
    return out


def test_the_host_offers_plain_c_and_some_simd_levels():
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        pytest.skip(f"the x86 levels of X264_CPU_LEVELS do not apply to {platform.machine()}")
    levels = host_cpu_levels()
    assert levels[0] == "0" and len(levels) >= 2, (levels, x264_cpu_capabilities())
    assert x264_cpu_capabilities(False) == "none!"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_cpu_level_gives_the_plain_c_bytes(sequences, family):
    name = FAMILIES[family]
    frames = sequences[name]
    noise = PERTURBATIONS[name].rate_control == GRAIN_RATE_CONTROL
    plain = encode_h264(frames, noise=noise, simd=False)
    digests = {level: hashlib.sha256(encode_h264(frames, noise=noise, cpu_level=level)).hexdigest()
               for level in host_cpu_levels()}
    digests["auto"] = hashlib.sha256(encode_h264(frames, noise=noise)).hexdigest()
    assert set(digests.values()) == {hashlib.sha256(plain).hexdigest()}, digests
