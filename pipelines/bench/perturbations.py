"""How long one image takes in ImageNet-P: sequence generation and video encoding, apart.

For each perturbation (at difficulty 1; the other noise difficulties cost the same) and each
photograph of :data:`pipelines.bench.corruptions.BENCH_IMAGES`: the frames are made with
``transforms.perturb_sequence`` as a release makes them (warmed up once, then the median of
``repeats`` calls), then encoded as the release's H.264 MP4 (one x264 thread, at the given preset) on both paths in
the same run, x264's SIMD code in cpu-independent mode (a release's default) and its plain C code
(``--no-simd``), whose bytes are checked to be equal, and once as the PNG frames of the TFDS
``video`` feature. An encode
takes seconds and does the same work every time, so one call is timed. Figures are milliseconds
per sequence, averaged over the photographs.
"""
from __future__ import annotations

import statistics
import time
from functools import partial
from typing import Callable, Optional, Sequence

from schemas.imagenet_p import GRAIN_RATE_CONTROL, PERTURBATIONS, select_perturbations
from transforms import example_rng, perturb_sequence, preprocess_uncropped
from transforms.threads import one_opencv_thread

from pipelines.bench.corruptions import BENCH_IMAGES, BENCH_RELEASE_SEED, median_ms, source_jpeg
from pipelines.formats.video import PRESETS, encode_frames_lossless, encode_h264, encoder_versions

__all__ = ["timed", "run_p_bench", "format_p_table"]


def timed(call: Callable[[], object]) -> tuple[float, object]:
    """``(milliseconds, result)`` of one call of ``call()``."""
    start = time.perf_counter()
    result = call()
    return 1000.0 * (time.perf_counter() - start), result


def _sequence(image, key: str, name: str):
    """One sequence as a release makes it: a fresh per-example RandomState, difficulty 1."""
    return perturb_sequence(image, name, example_rng(BENCH_RELEASE_SEED, key, name, 1))


def _time_perturbation(name: str, images: dict, repeats: int, preset: str) -> dict:
    """Generation, MP4 and PNG timings of one perturbation, averaged over ``images``."""
    noise = PERTURBATIONS[name].rate_control == GRAIN_RATE_CONTROL
    generate, encode, plain, lossless, sizes, identical = [], [], [], [], [], True
    for key, image in images.items():
        make = partial(_sequence, image, key, name)
        frames = make()  # warm-up: numba compilation, caches
        generate.append(median_ms(make, repeats))
        encode_ms, mp4 = timed(partial(encode_h264, frames, noise=noise, preset=preset, simd=True))
        plain_ms, plain_mp4 = timed(partial(encode_h264, frames, noise=noise, preset=preset, simd=False))
        png_ms, _ = timed(partial(encode_frames_lossless, frames))
        identical = identical and mp4 == plain_mp4
        encode.append(encode_ms)
        plain.append(plain_ms)
        lossless.append(png_ms)
        sizes.append(len(mp4))
    return {"frames": PERTURBATIONS[name].frames, "generate_ms": statistics.fmean(generate),
            "encode_ms": statistics.fmean(encode), "encode_plain_c_ms": statistics.fmean(plain),
            "identical_bytes": identical, "lossless_ms": statistics.fmean(lossless),
            "mp4_bytes": statistics.fmean(sizes), "difficulties": len(PERTURBATIONS[name].difficulties)}


def run_p_bench(perturbations: Optional[Sequence[str]] = None, images: int = len(BENCH_IMAGES),
                repeats: int = 3, preset: str = "veryslow") -> dict:
    """Time every selected perturbation: sequence generation, H.264 encode, lossless frames.

    Parameters
    ----------
    perturbations : sequence of str, optional
        Names to time (default: all 14).
    images : int
        How many of :data:`pipelines.bench.corruptions.BENCH_IMAGES` to average over, 1..5.
    repeats : int
        Timed generation calls per measurement (>= 1); the median is kept.
    preset : str
        x264 preset (:data:`pipelines.formats.video.PRESETS`); ``'veryslow'`` is a release's default.

    Returns
    -------
    dict
        JSON-ready, milliseconds per sequence:

        - ``perturbations``: name -> ``{"frames", "generate_ms", "encode_ms" (MP4, SIMD
          cpu-independent), "encode_plain_c_ms" (MP4, plain C), "identical_bytes" (the two MP4s
          are equal), "lossless_ms" (PNG frames), "mp4_bytes", "difficulties"}``;
        - ``decode_ms``: decode a source JPEG + Resize(256), once per image;
        - ``total_ms``: one image through every dataset of the selection (``datasets``; each noise
          type counts three times): decode + generate + encode + lossless each; ``total_plain_c_ms``
          the same with the plain C encode;
        - ``preset``, ``simd`` (True: the default encode of ``encode_ms``), ``threads`` (1), ``images``,
          ``repeats``, ``encoder`` (:func:`pipelines.formats.video.encoder_versions`).
    """
    names = select_perturbations(perturbations)
    if isinstance(images, bool) or not isinstance(images, int) or not 1 <= images <= len(BENCH_IMAGES):
        raise ValueError(f"images must be an int in 1..{len(BENCH_IMAGES)}, got {images!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    if preset not in PRESETS:
        raise ValueError(f"unknown x264 preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    encoder = encoder_versions()  # finds and warms up ffmpeg before any timing
    one_opencv_thread()  # as a build's workers run the perturbations
    jpegs = {f"bench/{name}": source_jpeg(name) for name in list(BENCH_IMAGES)[:images]}
    decode_ms = []
    for jpeg in jpegs.values():
        preprocess_uncropped(jpeg)  # warm-up
        decode_ms.append(median_ms(partial(preprocess_uncropped, jpeg), repeats))
    inputs = {key: preprocess_uncropped(jpeg) for key, jpeg in jpegs.items()}
    timings = {name: _time_perturbation(name, inputs, repeats, preset) for name in names}
    decode = statistics.fmean(decode_ms)
    return {
        "perturbations": timings,
        "decode_ms": decode,
        "datasets": sum(t["difficulties"] for t in timings.values()),
        "total_ms": decode + sum(t["difficulties"] * (t["generate_ms"] + t["encode_ms"] + t["lossless_ms"])
                                 for t in timings.values()),
        "total_plain_c_ms": decode + sum(t["difficulties"] * (t["generate_ms"] + t["encode_plain_c_ms"]
                                                              + t["lossless_ms"]) for t in timings.values()),
        "preset": preset, "simd": True, "threads": 1,
        "images": list(BENCH_IMAGES)[:images],
        "repeats": repeats,
        "encoder": encoder,
    }


def format_p_table(result: dict) -> str:
    """The figures of :func:`run_p_bench` as an aligned text table (milliseconds per sequence)."""
    width = max(len("perturbation"), *(len(name) for name in result["perturbations"]))
    header = (f"{'perturbation':<{width}}{'frames':>8}{'generate':>10}{'encode':>10}{'plain C':>10}"
              f"{'speed-up':>10}{'same MP4':>10}{'lossless':>10}{'MP4 KiB':>10}")
    lines = [f"ImageNet-P, ms per sequence (difficulty 1) over {len(result['images'])} image(s); "
             f"H.264 preset {result['preset']}, x264 on {result['threads']} thread (encode: SIMD "
             f"cpu-independent, the default; plain C: --no-simd); "
             f"generation median of {result['repeats']}", header, "-" * len(header)]
    for name, t in result["perturbations"].items():
        lines.append(f"{name:<{width}}{t['frames']:8d}{t['generate_ms']:10.1f}{t['encode_ms']:10.1f}"
                     f"{t['encode_plain_c_ms']:10.1f}{t['encode_plain_c_ms'] / t['encode_ms']:9.2f}x"
                     f"{'yes' if t['identical_bytes'] else 'NO':>10}{t['lossless_ms']:10.1f}{t['mp4_bytes'] / 1024:10.1f}")
    lines += ["-" * len(header), "encode: the MP4 of the ImageNet-P/ tree; lossless: the PNG frames of TFDS", ""]
    summary = [("decode + Resize(256)", result["decode_ms"]),
               (f"total per image, {result['datasets']} datasets", result["total_ms"]),
               (f"total per image, {result['datasets']} datasets, plain C", result["total_plain_c_ms"])]
    label_width = max(len(label) for label, _ in summary)
    lines += [f"{label:<{label_width}}  {ms:10.1f} ms" for label, ms in summary]
    lines += ["encoder: " + ", ".join(f"{key} {value}" for key, value in result["encoder"].items())]
    return "\n".join(lines)
