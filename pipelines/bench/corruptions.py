"""How long one image takes: every corruption at every severity, plus decode and JPEG encode.

The measurements run on real photographs from ``skimage.data``, each JPEG-encoded in memory
first so that the decode step decodes a real JPEG, then preprocessed to 224x224 as a release does;
OpenCV runs on one thread, as in a build's workers (:func:`transforms.threads.one_opencv_thread`).
Every call is warmed up once (numba compilation, texture caches) before it is timed; a figure is
the median over ``repeats`` calls, averaged over the images. All figures are milliseconds per
image; ``run_bench`` returns them as a JSON-ready dict and :func:`format_table` prints it.
"""
from __future__ import annotations

import io
import os
import platform
import statistics
import time
from functools import partial
from importlib import metadata
from types import MappingProxyType
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
from PIL import Image
from skimage import data

from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, SEVERITIES, select_corruptions
from transforms import RNG_MODES, corrupt, encode_jpeg, example_rng, example_seed, preprocess
from transforms.draws import draw_ms
from transforms.threads import one_opencv_thread

__all__ = ["BENCH_IMAGES", "SOURCE_JPEG_QUALITY", "BENCH_RELEASE_SEED", "REFERENCE_ESTIMATE_MS", "CLOCKS",
           "REPORTED_PACKAGES", "source_jpeg", "median_ms", "machine_info", "load_average", "select_rng_modes",
           "check_clock", "run_bench", "format_table"]


#: Photographs timed, name -> loader of an RGB uint8 array (all ship with scikit-image).
BENCH_IMAGES = MappingProxyType({
    "chelsea": data.chelsea,
    "astronaut": data.astronaut,
    "coffee": data.coffee,
    "rocket": data.rocket,
    "motorcycle": lambda: data.stereo_motorcycle()[0],
})

SOURCE_JPEG_QUALITY = 90
"""Quality of the in-memory source JPEGs whose decoding is timed (typical of ImageNet files)."""

BENCH_RELEASE_SEED = 0
"""Release seed of the per-example RandomStates used while timing."""

REFERENCE_ESTIMATE_MS = 9500.0
"""The reference code's time for one source image through the 75 benchmark conditions (decode,
corrupt, encode), 9.5 s, as quoted for the reference code on this class of 2-core machine. A quoted figure:
the bench does not run the reference code."""

#: ``--clock`` name -> seconds now: wall time, or the CPU time of this process (all its threads),
#: which other processes' load on a shared machine does not stretch.
CLOCKS = MappingProxyType({"wall": time.perf_counter, "cpu": time.process_time})

#: Distributions whose versions are reported with the figures.
REPORTED_PACKAGES = ("numpy", "scipy", "scikit-image", "opencv-python-headless", "pillow", "numba")


def source_jpeg(name: str) -> bytes:
    """Photograph ``name`` of :data:`BENCH_IMAGES` as JPEG bytes (Pillow, quality 90)."""
    if name not in BENCH_IMAGES:
        raise ValueError(f"unknown bench image {name!r}; valid names: {', '.join(BENCH_IMAGES)}")
    buffer = io.BytesIO()
    Image.fromarray(BENCH_IMAGES[name]()).save(buffer, format="JPEG", quality=SOURCE_JPEG_QUALITY)
    return buffer.getvalue()


def median_ms(call: Callable[[], object], repeats: int, clock: str = "wall") -> float:
    """Median time of ``call()`` over ``repeats`` runs on ``clock`` (see :data:`CLOCKS`), in milliseconds."""
    now = CLOCKS[clock]
    times = []
    for _ in range(repeats):
        start = now()
        call()
        times.append(now() - start)
    return 1000.0 * statistics.median(times)


def machine_info() -> dict:
    """CPU model, core counts, Python and the versions of the libraries that do the work."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    libraries = {}
    for package in REPORTED_PACKAGES:
        try:
            libraries[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            libraries[package] = None
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": usable, "python": platform.python_version(),
            "platform": platform.platform(), "libraries": libraries}


def load_average() -> Optional[float]:
    """The 1-minute load average (None where the OS does not give it): how shared the machine was."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def select_rng_modes(modes: Optional[Iterable[str]] = None) -> tuple[str, ...]:
    """The random modes to time, in :data:`transforms.RNG_MODES` order; both when ``modes`` is None.

    Raises
    ------
    ValueError
        If a mode is unknown (the message lists the valid modes) or the selection is empty.
    """
    if modes is None:
        return RNG_MODES
    wanted = set(modes)
    unknown = sorted(wanted - set(RNG_MODES))
    if unknown or not wanted:
        raise ValueError(f"unknown or empty rng mode selection {unknown or '[]'}; "
                         f"valid modes: {', '.join(RNG_MODES)}")
    return tuple(mode for mode in RNG_MODES if mode in wanted)


def _corrupt_one(image: np.ndarray, key: str, name: str, severity: int, mode: str) -> np.ndarray:
    """One output as a release makes it: a fresh per-example stream of ``mode``, then ``corrupt``."""
    return corrupt(image, name, severity, example_rng(BENCH_RELEASE_SEED, key, name, severity, mode))


def check_clock(clock: str) -> str:
    """Return ``clock`` if it names one of :data:`CLOCKS`, else raise ``ValueError`` listing them."""
    if clock not in CLOCKS:
        raise ValueError(f"unknown clock {clock!r}; valid clocks: {', '.join(CLOCKS)}")
    return clock


def _time_corruption(name: str, images: dict, repeats: int, mode: str, clock: str) -> dict:
    """Corrupt, draw and encode timings of one corruption in one random mode, per severity,
    averaged over ``images``."""
    corrupt_ms, draws_ms, numpy_draws_ms, encode_ms = [], [], [], []
    for severity in SEVERITIES:
        per_image_corrupt, per_image_draws, per_image_numpy_draws, per_image_encode = [], [], [], []
        for key, image in images.items():
            one = partial(_corrupt_one, image, key, name, severity, mode)
            output = one()  # warm-up: numba compilation, texture caches
            encode_jpeg(output)
            per_image_corrupt.append(median_ms(one, repeats, clock))
            seed = example_seed(BENCH_RELEASE_SEED, key, name, severity)
            per_image_draws.append(draw_ms(image, name, severity, seed, repeats, mode, CLOCKS[clock]))
            per_image_numpy_draws.append(draw_ms(image, name, severity, seed, repeats, "numpy", CLOCKS[clock]))
            per_image_encode.append(median_ms(partial(encode_jpeg, output), repeats, clock))
        corrupt_ms.append(statistics.fmean(per_image_corrupt))
        draws_ms.append(statistics.fmean(per_image_draws))
        numpy_draws_ms.append(statistics.fmean(per_image_numpy_draws))
        encode_ms.append(statistics.fmean(per_image_encode))
    return {"ms": statistics.fmean(corrupt_ms), "ms_by_severity": corrupt_ms,
            "draw_ms": statistics.fmean(draws_ms), "draw_ms_by_severity": draws_ms,
            "draw_numpy_ms": statistics.fmean(numpy_draws_ms), "draw_numpy_ms_by_severity": numpy_draws_ms,
            "encode_ms_by_severity": encode_ms, "benchmark": name in BENCHMARK_CORRUPTIONS}


def _totals(timings: dict, decode: float) -> dict:
    """The per-image totals and ratios of one random mode, from its corruption timings."""
    benchmark = [t for t in timings.values() if t["benchmark"]]
    encode = statistics.fmean(ms for t in (benchmark or timings.values()) for ms in t["encode_ms_by_severity"])
    total = decode + sum(c + e for t in benchmark for c, e in zip(t["ms_by_severity"], t["encode_ms_by_severity"]))
    draws = sum(ms for t in benchmark for ms in t["draw_ms_by_severity"])
    numpy_draws = sum(ms for t in benchmark for ms in t["draw_numpy_ms_by_severity"])
    floor_io = decode + len(BENCHMARK_CORRUPTIONS) * len(SEVERITIES) * encode
    return {"encode_ms": encode, "total_75_ms": total, "benchmark_conditions": len(benchmark) * len(SEVERITIES),
            "floor_io_75_ms": floor_io, "draw_75_ms": draws, "floor_exact_75_ms": floor_io + draws,
            "draw_numpy_75_ms": numpy_draws, "floor_numpy_75_ms": floor_io + numpy_draws,
            "ratios": {"total_over_floor_io": total / floor_io, "total_over_floor_exact": total / (floor_io + draws),
                       "total_over_floor_numpy": total / (floor_io + numpy_draws),
                       "reference_estimate_over_total": REFERENCE_ESTIMATE_MS / total}}


def run_bench(corruptions: Optional[Sequence[str]] = None, images: int = len(BENCH_IMAGES),
              repeats: int = 3, rng_modes: Optional[Sequence[str]] = None, clock: str = "wall") -> dict:
    """Time every selected corruption at every severity and random mode, its random draws, decoding
    and JPEG encoding.

    Parameters
    ----------
    corruptions : sequence of str, optional
        Names to time (default: all 19).
    images : int
        How many of :data:`BENCH_IMAGES` to average over, 1..5.
    repeats : int
        Timed calls per measurement (>= 1); the median is kept.
    rng_modes : sequence of str, optional
        Random modes to time, from :data:`transforms.RNG_MODES` (default: both, in one run).
    clock : str
        ``'wall'`` (default) or ``'cpu'``: what a figure measures, see :data:`CLOCKS`.

    Returns
    -------
    dict
        JSON-ready, all times in milliseconds per image. The top-level figures are those of the
        first mode timed (``rng``; ``'reference'`` by default):

        - ``corruptions``: name -> ``{"ms": mean over severities, "ms_by_severity": [5],
          "draw_ms": mean over severities of the random draws alone (within ``ms``; see
          :func:`transforms.draws.draw_ms`), "draw_ms_by_severity": [5], "draw_numpy_ms",
          "draw_numpy_ms_by_severity": [5] (the same calls replayed on NumPy's ``RandomState``),
          "encode_ms_by_severity": [5] (JPEG q85 of that output), "benchmark": bool}``;
        - ``decode_ms``: decode a source JPEG + Resize(256) + CenterCrop(224);
        - ``encode_ms``: mean JPEG q85 encode of the benchmark outputs timed (of all outputs
          when no benchmark corruption is selected);
        - ``total_75_ms``: one source image through the benchmark conditions timed
          (``benchmark_conditions``, 75 without a selection): decode + corrupt + encode each;
        - ``floor_io_75_ms``: decode + 75 encodes, the cost of a release with free corruptions;
        - ``draw_75_ms``: the random draws of the benchmark conditions timed, on the mode's stream
          (the reference mode's: :class:`transforms.exact_rng.ExactRandomState`);
        - ``floor_exact_75_ms``: ``floor_io_75_ms + draw_75_ms``, the floor of a release that
          keeps the random stream of its mode and makes everything else free;
        - ``draw_numpy_75_ms``, ``floor_numpy_75_ms``: the same draws replayed on NumPy's own
          ``RandomState``, and the I/O floor plus them: the floor as NumPy's samplers set it;
        - ``ratios``: ``total_over_floor_io``, ``total_over_floor_exact``,
          ``total_over_floor_numpy`` and ``reference_estimate_over_total``
          (:data:`REFERENCE_ESTIMATE_MS` / ``total_75_ms``);
        - ``modes``: mode -> the figures above from ``encode_ms`` to ``ratios`` for that mode, and
          its ``corruptions`` as name -> ``{"ms", "draw_ms", "draw_numpy_ms"}``;
        - ``reference_estimate``: ``{"ms": REFERENCE_ESTIMATE_MS, "source": ...}``, quoted;
        - ``rng``, ``clock``, ``images``, ``repeats``, ``machine`` (with the 1-minute load average at
          the start and at the end of the run).
    """
    names = select_corruptions(corruptions)
    modes = select_rng_modes(rng_modes)
    check_clock(clock)
    load_at_start = load_average()
    if isinstance(images, bool) or not isinstance(images, int) or not 1 <= images <= len(BENCH_IMAGES):
        raise ValueError(f"images must be an int in 1..{len(BENCH_IMAGES)}, got {images!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    one_opencv_thread()  # as a build's workers run the corruptions
    jpegs = {f"bench/{name}": source_jpeg(name) for name in list(BENCH_IMAGES)[:images]}
    decode_ms = []
    for jpeg in jpegs.values():
        preprocess(jpeg)  # warm-up
        decode_ms.append(median_ms(partial(preprocess, jpeg), repeats, clock))
    inputs = {key: preprocess(jpeg) for key, jpeg in jpegs.items()}
    decode = statistics.fmean(decode_ms)
    timings = {mode: {name: _time_corruption(name, inputs, repeats, mode, clock) for name in names} for mode in modes}
    summaries = {mode: {**_totals(timings[mode], decode), "corruptions": {
        name: {"ms": t["ms"], "draw_ms": t["draw_ms"], "draw_numpy_ms": t["draw_numpy_ms"]}
        for name, t in timings[mode].items()}} for mode in modes}
    return {
        "corruptions": timings[modes[0]],
        "decode_ms": decode,
        **_totals(timings[modes[0]], decode),
        "rng": modes[0],
        "clock": clock,
        "modes": summaries,
        "reference_estimate": {"ms": REFERENCE_ESTIMATE_MS, "source": "quoted for the reference code on "
                               "this class of 2-core machine; not measured by this bench"},
        "images": list(BENCH_IMAGES)[:images],
        "repeats": repeats,
        "machine": {**machine_info(), "load_average": [load_at_start, load_average()]},
    }


def _format_modes(result: dict, width: int) -> list[str]:
    """Lines comparing the random modes of :func:`run_bench`: per corruption, then totals and ratios."""
    modes = result["modes"]
    header = f"{'corruption':<{width}}" + "".join(f"{mode + ' ms':>14}{'draws':>9}{'NumPy':>9}" for mode in modes)
    lines = ["by random mode (ms per image, mean over severities)", header, "-" * len(header)]
    for name in result["corruptions"]:
        lines.append(f"{name:<{width}}" + "".join(
            f"{m['corruptions'][name]['ms']:14.2f}{m['corruptions'][name]['draw_ms']:9.2f}"
            f"{m['corruptions'][name]['draw_numpy_ms']:9.2f}" for m in modes.values()))
    columns = ("total", "draws", "NumPy draws", "I/O floor", "exact floor", "total/I/O", "total/exact",
               "total/NumPy", "quoted/total")
    header = f"{'mode':<{width}}" + "".join(f"{c:>13}" for c in columns)
    lines += ["", header, "-" * len(header)]
    for mode, m in modes.items():
        ratios = m["ratios"]
        cells = (m["total_75_ms"], m["draw_75_ms"], m["draw_numpy_75_ms"], m["floor_io_75_ms"],
                 m["floor_exact_75_ms"], ratios["total_over_floor_io"], ratios["total_over_floor_exact"],
                 ratios["total_over_floor_numpy"], ratios["reference_estimate_over_total"])
        lines.append(f"{mode:<{width}}" + "".join(f"{c:13.2f}" for c in cells))
    quoted = result["reference_estimate"]
    lines.append(f"quoted: the reference code's {quoted['ms'] / 1000:g} s per image, {quoted['source']}")
    return lines


def format_table(result: dict) -> str:
    """The figures of :func:`run_bench` as an aligned text table (milliseconds per image)."""
    width = max(len("corruption"), *(len(name) + 2 for name in result["corruptions"]))  # room for " *"
    severities = "".join(f"{f's{s}':>9}" for s in SEVERITIES)
    header = f"{'corruption':<{width}}{severities}{'mean':>9}{'draws':>9}{'NumPy':>9}{'encode':>9}"
    lines = [f"ms per image ({result['clock']} clock), median of {result['repeats']} over "
             f"{len(result['images'])} image(s), rng mode {result['rng']}: " + ", ".join(result["images"]),
             header, "-" * len(header)]
    for name, timing in result["corruptions"].items():
        marker = "" if timing["benchmark"] else " *"
        cells = "".join(f"{ms:9.2f}" for ms in timing["ms_by_severity"])
        encode = statistics.fmean(timing["encode_ms_by_severity"])
        lines.append(f"{name + marker:<{width}}{cells}{timing['ms']:9.2f}{timing['draw_ms']:9.2f}"
                     f"{timing['draw_numpy_ms']:9.2f}{encode:9.2f}")
    lines += ["-" * len(header), "* extra corruption, not in the 75 benchmark conditions; "
              "draws: on the mode's stream, NumPy: the same calls on NumPy's RandomState", ""]
    summary = [
        ("decode + preprocess", result["decode_ms"]),
        ("JPEG q85 encode (mean)", result["encode_ms"]),
        (f"total, {result['benchmark_conditions']} benchmark conditions", result["total_75_ms"]),
        ("I/O floor (decode + 75 encodes)", result["floor_io_75_ms"]),
        (f"random draws, {result['benchmark_conditions']} benchmark conditions", result["draw_75_ms"]),
        ("exact floor (I/O floor + draws)", result["floor_exact_75_ms"]),
        ("the draws on NumPy's RandomState", result["draw_numpy_75_ms"]),
        ("NumPy floor (I/O floor + NumPy's draws)", result["floor_numpy_75_ms"]),
    ]
    label_width = max(len(label) for label, _ in summary)
    lines += [f"{label:<{label_width}}  {ms:10.2f} ms" for label, ms in summary]
    lines.append(f"{'total / exact floor':<{label_width}}  {result['ratios']['total_over_floor_exact']:10.2f} x")
    lines.append(f"{'total / NumPy floor':<{label_width}}  {result['ratios']['total_over_floor_numpy']:10.2f} x")
    lines += ["", *_format_modes(result, width)]
    machine = result["machine"]
    libraries = ", ".join(f"{k} {v}" for k, v in machine["libraries"].items() if v)
    load = ", ".join("-" if value is None else f"{value:.2f}" for value in machine["load_average"])
    lines += ["", f"machine: {machine['cpu']}, {machine['usable_cores']}/{machine['cores']} cores usable, "
              f"Python {machine['python']}, 1-minute load average at start and end: {load}",
              f"libraries: {libraries}"]
    return "\n".join(lines)
