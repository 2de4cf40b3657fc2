"""``imagenet-cp bench`` for every edition: corrupt + encode time per image at each edition's size.

For each edition of :data:`schemas.editions.EDITIONS` and each selected corruption: the median
time of ``transforms.corrupt(..., edition=...)`` per severity (reference random mode, a fresh
per-example stream as a release makes it), averaged over the bench photographs preprocessed with
the edition's recipe, and the cost of saving the output as that edition does (JPEG q85, or the raw
row of a ``.npy``). ``total_ms`` is decode + preprocess plus corrupt + save of the benchmark
conditions timed; the 224 row is the same measurement as the main table, so ratios between
editions come from one run on one machine.
"""
from __future__ import annotations

import statistics
from functools import partial
from typing import Optional, Sequence

from schemas.edition import JPEG
from schemas.editions import EDITIONS
from schemas.imagenet_c import BENCHMARK_CORRUPTIONS, SEVERITIES, select_corruptions
from transforms import corrupt, encode_jpeg, example_rng, preprocess

from pipelines.bench.corruptions import BENCH_IMAGES, BENCH_RELEASE_SEED, check_clock, median_ms, source_jpeg


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


def _time_edition(edition: str, names, jpegs: dict, repeats: int, clock: str) -> dict:
    save = encode_jpeg if EDITIONS[edition].c.encoding == JPEG else (lambda array: array.tobytes())
    decode = statistics.fmean(median_ms(partial(preprocess, jpeg, edition), repeats, clock)
                              for jpeg in jpegs.values())
    images = {key: preprocess(jpeg, edition) for key, jpeg in jpegs.items()}
    corruptions = {}
    for name in names:
        by_severity, save_by_severity = [], []
        for severity in SEVERITIES:
            corrupt_ms, save_ms = [], []
            for key, image in images.items():
                def one(image=image, key=key):
                    rng = example_rng(BENCH_RELEASE_SEED, key, name, severity, "reference")
                    return corrupt(image, name, severity, rng, edition=edition)
                output = one()  # warm-up
                corrupt_ms.append(median_ms(one, repeats, clock))
                save_ms.append(median_ms(partial(save, output), repeats, clock))
            by_severity.append(statistics.fmean(corrupt_ms))
            save_by_severity.append(statistics.fmean(save_ms))
        corruptions[name] = {"ms": statistics.fmean(by_severity), "ms_by_severity": by_severity,
                             "save_ms": statistics.fmean(save_by_severity),
                             "benchmark": name in BENCHMARK_CORRUPTIONS}
    benchmark = [t for t in corruptions.values() if t["benchmark"]]
    total = decode + sum(len(SEVERITIES) * (t["ms"] + t["save_ms"]) for t in benchmark)
    return {"image_size": EDITIONS[edition].image_size, "encoding": EDITIONS[edition].c.encoding,
            "decode_ms": decode, "total_ms": total, "benchmark_conditions": len(benchmark) * len(SEVERITIES),
            "corruptions": corruptions}


def run_editions_bench(corruptions: Optional[Sequence[str]] = None, editions: Optional[Sequence[str]] = None,
                       images: int = 1, repeats: int = 3, clock: str = "wall") -> dict:
    """Time the selected corruptions in every selected edition (see the module docstring).

    Returns
    -------
    dict
        edition -> ``{"image_size", "encoding", "decode_ms", "total_ms", "benchmark_conditions",
        "corruptions": name -> {"ms", "ms_by_severity", "save_ms", "benchmark"}}``, plus
        ``"total_over_imagenet"`` and ``"per_pixel_over_imagenet"`` (that ratio divided by the
        ratio of the pixel counts: 1.0 is the 224's cost per pixel) when the 224 edition is timed;
        all times in ms per image on ``clock`` (see :data:`pipelines.bench.corruptions.CLOCKS`).
    """
    names = select_corruptions(corruptions)
    chosen = select_editions(editions)
    if isinstance(images, bool) or not isinstance(images, int) or not 1 <= images <= len(BENCH_IMAGES):
        raise ValueError(f"images must be an int in 1..{len(BENCH_IMAGES)}, got {images!r}")
    check_clock(clock)
    jpegs = {f"bench/{name}": source_jpeg(name) for name in list(BENCH_IMAGES)[:images]}
    result = {edition: _time_edition(edition, names, jpegs, repeats, clock) for edition in chosen}
    if "imagenet" in result and result["imagenet"]["total_ms"]:
        base = result["imagenet"]
        for timing in result.values():
            timing["total_over_imagenet"] = timing["total_ms"] / base["total_ms"]
            timing["per_pixel_over_imagenet"] = timing["total_over_imagenet"] / (
                timing["image_size"] / base["image_size"]) ** 2
    return result


def format_editions_table(result: dict) -> str:
    """The figures of :func:`run_editions_bench` as text: mean ms per corruption and edition."""
    editions = list(result)
    names = list(next(iter(result.values()))["corruptions"])
    width = max(len("decode+preprocess"), *(len(n) for n in names))
    titles = [f"{e} {result[e]['image_size']}" for e in editions]
    header = f"{'corruption':<{width}}" + "".join(f"{title:>18}" for title in titles)
    lines = ["ms per image per edition (corrupt, mean over severities; reference rng)", header, "-" * len(header)]
    for name in names:
        lines.append(f"{name:<{width}}" + "".join(f"{result[e]['corruptions'][name]['ms']:18.2f}" for e in editions))
    lines.append("-" * len(header))
    for label, field in (("save (mean)", None), ("decode+preprocess", "decode_ms"), ("total", "total_ms")):
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
    return "\n".join(lines)
