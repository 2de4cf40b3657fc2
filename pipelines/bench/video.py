"""How the x264 preset trades encode time against MP4 size and decoded fidelity.

Real ImageNet-P sequences of a photograph from ``skimage.data`` (by default gaussian_noise, which
the reference encodes with ``-tune grain``, and rotate, encoded at CRF 20) go through
:func:`pipelines.formats.video.encode_h264` at each preset, with and without SIMD, and back through the
evaluator's decoder (:func:`pipelines.formats.video.decode_video`). The PSNR compares the decoded frames
with the lossless frames, as the TFDS ``Video`` feature stores them.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from schemas.imagenet_p import GRAIN_RATE_CONTROL, PERTURBATIONS, perturbation_names_text
from transforms import example_rng, perturb_sequence, preprocess_uncropped

from pipelines.bench.corruptions import BENCH_IMAGES, BENCH_RELEASE_SEED, machine_info
from pipelines.formats.video import (PRESETS, decode_frames_lossless, decode_video, encode_frames_lossless, encode_h264,
                    encoder_versions)

__all__ = ["BENCH_PERTURBATIONS", "BENCH_PRESETS", "psnr_db", "bench_sequence", "measure_encode", "run_video_bench",
           "format_video_table"]

#: One perturbation per rate control of the reference: tune grain (CRF 23), then CRF 20.
BENCH_PERTURBATIONS = ("gaussian_noise", "rotate")

#: Presets compared, slowest first; ``veryslow`` is the reference's.
BENCH_PRESETS = ("veryslow", "slow", "medium", "fast")


def psnr_db(decoded: np.ndarray, original: np.ndarray) -> float:
    """Peak signal-to-noise ratio over all frames and channels, in dB (peak 255; inf if equal)."""
    mse = np.mean((decoded.astype(np.float64) - original.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(255.0 ** 2 / mse))


def bench_sequence(name: str, photo: str = "chelsea") -> np.ndarray:
    """The difficulty-1 frames of perturbation ``name`` for photograph ``photo`` of the bench set."""
    if name not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {name!r}; valid names: {perturbation_names_text()}")
    if photo not in BENCH_IMAGES:
        raise ValueError(f"unknown bench image {photo!r}; valid names: {', '.join(BENCH_IMAGES)}")
    image = preprocess_uncropped(BENCH_IMAGES[photo]())
    return perturb_sequence(image, name, example_rng(BENCH_RELEASE_SEED, f"bench/{photo}", name, 1))


def measure_encode(frames: np.ndarray, *, noise: bool, preset: str, simd: bool) -> dict:
    """One encode: wall time (ms), MP4 size (bytes) and decoded PSNR (dB) against ``frames``."""
    start = time.perf_counter()
    mp4 = encode_h264(frames, noise=noise, preset=preset, simd=simd)
    elapsed = time.perf_counter() - start
    return {"preset": preset, "simd": simd, "ms": 1000.0 * elapsed, "bytes": len(mp4),
            "psnr_db": psnr_db(decode_video(mp4), frames)}


def run_video_bench(perturbations: Sequence[str] = BENCH_PERTURBATIONS,
                    presets: Sequence[str] = BENCH_PRESETS, simd: Sequence[bool] = (False, True),
                    photo: str = "chelsea") -> dict:
    """Encode each perturbation's sequence at every preset and SIMD setting.

    Parameters
    ----------
    perturbations : sequence of str
        ImageNet-P names; each is encoded with its reference rate control.
    presets : sequence of str
        x264 presets (:data:`pipelines.formats.video.PRESETS`).
    simd : sequence of bool
        SIMD settings to time (True: cpu-independent SIMD, the default; False: plain C; same bytes).
    photo : str
        A key of :data:`pipelines.bench.corruptions.BENCH_IMAGES`.

    Returns
    -------
    dict
        JSON-ready: ``sequences`` maps each name to its ``rate_control``, ``frames``, the lossless
        PNG frames' total ``png_bytes`` and ``png_ms`` (encode), and ``encodes`` (one
        :func:`measure_encode` dict per preset and SIMD setting); plus ``photo``, ``machine``
        and ``encoder`` (:func:`pipelines.formats.video.encoder_versions`).
    """
    unknown = [preset for preset in presets if preset not in PRESETS]
    if unknown or not presets:
        raise ValueError(f"unknown or empty preset selection {unknown}; valid presets: {', '.join(PRESETS)}")
    encoder = encoder_versions()  # also finds and warms up the ffmpeg binary before any timing
    sequences = {}
    for name in perturbations:
        frames = bench_sequence(name, photo)
        noise = PERTURBATIONS[name].rate_control == GRAIN_RATE_CONTROL
        start = time.perf_counter()
        pngs = encode_frames_lossless(frames)
        png_ms = 1000.0 * (time.perf_counter() - start)
        lossless = decode_frames_lossless(pngs)
        sequences[name] = {
            "rate_control": " ".join(PERTURBATIONS[name].rate_control),
            "frames": len(frames),
            "png_bytes": sum(len(png) for png in pngs),
            "png_ms": png_ms,
            "encodes": [measure_encode(lossless, noise=noise, preset=preset, simd=flag)
                        for preset in presets for flag in simd],
        }
    return {"photo": photo, "sequences": sequences, "machine": machine_info(), "encoder": encoder}


def format_video_table(result: dict) -> str:
    """The figures of :func:`run_video_bench` as a Markdown table."""
    lines = ["| perturbation (rate control) | preset | SIMD | encode ms | MP4 KiB | PSNR dB |",
             "|---|---|---|---:|---:|---:|"]
    for name, sequence in result["sequences"].items():
        label = f"{name} ({sequence['rate_control']}), {sequence['frames']} frames"
        for row in sequence["encodes"]:
            lines.append(f"| {label} | {row['preset']} | {'on' if row['simd'] else 'off'} | {row['ms']:.0f} "
                         f"| {row['bytes'] / 1024:.1f} | {row['psnr_db']:.2f} |")
        lines.append(f"| {label} | lossless PNG frames | - | {sequence['png_ms']:.0f} "
                     f"| {sequence['png_bytes'] / 1024:.1f} | inf |")
    machine, encoder = result["machine"], result["encoder"]
    lines += ["", f"Photo: skimage.data.{result['photo']}. Machine: {machine['cpu']}, "
              f"{machine['usable_cores']}/{machine['cores']} cores usable; x264 runs on one thread.",
              "Encoder: " + ", ".join(f"{key} {value}" for key, value in encoder.items())]
    return "\n".join(lines)
