"""``imagenet-cp bench`` for every edition: corrupt + encode time per image at each edition's size.

For each edition of :data:`schemas.editions.EDITIONS` and each selected corruption: the median
time of ``transforms.corrupt(..., edition=...)`` per severity (reference random mode, a fresh
per-example stream as a release makes it), averaged over the bench photographs, each stored as
the edition's input stores an image (:func:`edition_source`) and preprocessed with the edition's
recipe; the time of its random draws alone (``transforms.draws.draw_ms``); and the cost of saving
the output as that edition does (JPEG q85, or the raw row of a ``.npy``). ``total_ms`` is decode +
preprocess plus corrupt + save of the benchmark conditions timed, ``floor_exact_ms`` the same with
free corruptions that still make their draws (decode + preprocess, saves and draws): what no
exact formulation can go below. The 224 row is the same measurement as the main table, so ratios
between editions come from one run on one machine.
"""
from __future__ import annotations

import statistics
from functools import partial
from typing import Optional, Sequence

from schemas.edition import JPEG
from schemas.editions import EDITIONS
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, SEVERITIES, select_corruptions
from transforms import corrupt, encode_jpeg, encode_png, example_rng, example_seed, preprocess
from transforms.draws import draw_ms
from transforms.threads import one_opencv_thread

from pipelines.bench.corruptions import (BENCH_IMAGES, BENCH_RELEASE_SEED, CLOCKS, SOURCE_JPEG_QUALITY, check_clock,
                                         median_ms, source_jpeg)

__all__ = ["SMALL_SOURCE_ENCODERS", "select_editions", "edition_source", "run_editions_bench",
           "format_editions_table"]

#: Source family whose images are the dataset's own small squares -> how one is stored: Tiny
#: ImageNet's 64x64 JPEGs, and the 32x32 PNGs a CIFAR build lists its test set as.
SMALL_SOURCE_ENCODERS = {
    "tinyimagenet": partial(encode_jpeg, quality=SOURCE_JPEG_QUALITY),
    "cifar10": encode_png,
    "cifar100": encode_png,
}


def select_editions(names: Optional[Sequence[str]] = None) -> tuple[str, ...]:
    """Editions to time, in catalogue order (default: all).

    Raises
    ------
    ValueError
        On an unknown or empty selection.
    """
    if names is None:
        return tuple(EDITIONS)
    unknown = sorted(set(names) - set(EDITIONS))
    if unknown or not names:
        raise ValueError(f"unknown or empty edition selection {unknown or '[]'}; valid editions: {', '.join(EDITIONS)}")
    return tuple(e for e in EDITIONS if e in set(names))


def edition_source(edition: str, photo_jpeg: bytes) -> bytes:
    """A bench photograph as the input of ``edition`` stores one image, the bytes its build decodes.

    An ImageNet edition decodes the photograph's JPEG itself, at full size; an edition whose
    source family is in :data:`SMALL_SOURCE_ENCODERS` decodes the photograph preprocessed to its
    side and stored as that family stores it.
    """
    family = EDITIONS[edition].c.default_family
    if family not in SMALL_SOURCE_ENCODERS:
        return photo_jpeg
    return SMALL_SOURCE_ENCODERS[family](preprocess(photo_jpeg, edition))


def _time_edition(edition: str, names, jpegs: dict, repeats: int, clock: str) -> dict:
    save = encode_jpeg if EDITIONS[edition].c.encoding == JPEG else (lambda array: array.tobytes())
    sources = {key: edition_source(edition, jpeg) for key, jpeg in jpegs.items()}
    decode = statistics.fmean(median_ms(partial(preprocess, source, edition), repeats, clock)
                              for source in sources.values())
    images = {key: preprocess(source, edition) for key, source in sources.items()}
    corruptions = {}
    for name in names:
        by_severity, draws_by_severity, save_by_severity = [], [], []
        for severity in SEVERITIES:
            corrupt_ms, draws_ms, save_ms = [], [], []
            for key, image in images.items():
                def one(image=image, key=key):
                    rng = example_rng(BENCH_RELEASE_SEED, key, name, severity, "reference")
                    return corrupt(image, name, severity, rng, edition=edition)
                output = one()  # warm-up
                corrupt_ms.append(median_ms(one, repeats, clock))
                seed = example_seed(BENCH_RELEASE_SEED, key, name, severity)
                draws_ms.append(draw_ms(image, name, severity, seed, repeats, "reference", CLOCKS[clock], edition))
                save_ms.append(median_ms(partial(save, output), repeats, clock))
            by_severity.append(statistics.fmean(corrupt_ms))
            draws_by_severity.append(statistics.fmean(draws_ms))
            save_by_severity.append(statistics.fmean(save_ms))
        corruptions[name] = {"ms": statistics.fmean(by_severity), "ms_by_severity": by_severity,
                             "draw_ms": statistics.fmean(draws_by_severity), "draw_ms_by_severity": draws_by_severity,
                             "save_ms": statistics.fmean(save_by_severity),
                             "benchmark": name in BENCHMARK_CORRUPTIONS}
    benchmark = [t for t in corruptions.values() if t["benchmark"]]
    saves = sum(len(SEVERITIES) * t["save_ms"] for t in benchmark)
    draws = sum(sum(t["draw_ms_by_severity"]) for t in benchmark)
    return {"image_size": EDITIONS[edition].image_size, "encoding": EDITIONS[edition].c.encoding,
            "source_family": EDITIONS[edition].c.default_family, "decode_ms": decode,
            "total_ms": decode + saves + sum(sum(t["ms_by_severity"]) for t in benchmark),
            "draw_ms": draws, "floor_exact_ms": decode + saves + draws,
            "benchmark_conditions": len(benchmark) * len(SEVERITIES), "corruptions": corruptions}


def run_editions_bench(corruptions: Optional[Sequence[str]] = None, editions: Optional[Sequence[str]] = None,
                       images: int = 1, repeats: int = 3, clock: str = "wall") -> dict:
    """Time the selected corruptions in every selected edition (see the module docstring).

    Returns
    -------
    dict
        edition -> ``{"image_size", "encoding", "source_family", "decode_ms", "total_ms", "draw_ms",
        "floor_exact_ms", "benchmark_conditions", "corruptions": name -> {"ms", "ms_by_severity",
        "draw_ms", "draw_ms_by_severity", "save_ms", "benchmark"}}`` (``draw_ms`` of an edition:
        the draws of its benchmark conditions, one per severity), plus ``"total_over_imagenet"``,
        ``"per_pixel_over_imagenet"`` (that ratio divided by the ratio of the pixel counts: 1.0 is
        the 224's cost per pixel) and ``"floor_per_pixel_over_imagenet"`` (the edition's exact
        floor per pixel over the 224's *total* per pixel: the least ``per_pixel_over_imagenet``
        any exact formulation can reach) when the 224 edition is timed; all times in ms per image
        on ``clock`` (see :data:`pipelines.bench.corruptions.CLOCKS`).
    """
    names = select_corruptions(corruptions)
    chosen = select_editions(editions)
    if isinstance(images, bool) or not isinstance(images, int) or not 1 <= images <= len(BENCH_IMAGES):
        raise ValueError(f"images must be an int in 1..{len(BENCH_IMAGES)}, got {images!r}")
    check_clock(clock)
    one_opencv_thread()  # as a build's workers run the corruptions
    jpegs = {f"bench/{name}": source_jpeg(name) for name in list(BENCH_IMAGES)[:images]}
    result = {edition: _time_edition(edition, names, jpegs, repeats, clock) for edition in chosen}
    if "imagenet" in result and result["imagenet"]["total_ms"]:
        base = result["imagenet"]
        for timing in result.values():
            pixels = (timing["image_size"] / base["image_size"]) ** 2
            timing["total_over_imagenet"] = timing["total_ms"] / base["total_ms"]
            timing["per_pixel_over_imagenet"] = timing["total_over_imagenet"] / pixels
            timing["floor_per_pixel_over_imagenet"] = timing["floor_exact_ms"] / base["total_ms"] / pixels
    return result


def format_editions_table(result: dict) -> str:
    """The figures of :func:`run_editions_bench` as text: mean ms per corruption and edition."""
    editions = list(result)
    names = list(next(iter(result.values()))["corruptions"])
    width = max(len("floor per pixel / 224"), *(len(n) for n in names))
    titles = [f"{e} {result[e]['image_size']}" for e in editions]
    header = f"{'corruption':<{width}}" + "".join(f"{title:>18}" for title in titles)
    lines = ["ms per image per edition (corrupt, mean over severities; reference rng)", header, "-" * len(header)]
    for name in names:
        lines.append(f"{name:<{width}}" + "".join(f"{result[e]['corruptions'][name]['ms']:18.2f}" for e in editions))
    lines.append("-" * len(header))
    for label, field in (("save (mean)", None), ("decode+preprocess", "decode_ms"), ("total", "total_ms"),
                         ("exact floor", "floor_exact_ms")):
        cells = []
        for e in editions:
            value = (statistics.fmean(t["save_ms"] for t in result[e]["corruptions"].values()) if field is None
                     else result[e][field])
            cells.append(f"{value:18.2f}")
        lines.append(f"{label:<{width}}" + "".join(cells))
    if all("total_over_imagenet" in result[e] for e in editions):
        lines.append(f"{'total / imagenet':<{width}}" + "".join(f"{result[e]['total_over_imagenet']:18.3f}"
                                                                 for e in editions))
        lines.append(f"{'per pixel / 224':<{width}}" + "".join(f"{result[e]['per_pixel_over_imagenet']:18.3f}"
                                                                for e in editions))
        lines.append(f"{'floor per pixel / 224':<{width}}" + "".join(
            f"{result[e]['floor_per_pixel_over_imagenet']:18.3f}" for e in editions))
    return "\n".join(lines)
