"""ImageNet-P video encoding: reproducible H.264 MP4s, the evaluator's decoder, lossless PNG frames.

The reference wrote every sequence as RGB PNGs and ran (``docs/reference/algorithms.md``, "The ImageNet-P encode")::

    ffmpeg -r 1 -framerate 1 -i img%01d.png -vcodec libx264 <RC> -preset veryslow -y out.mp4

with ``<RC>`` = ``-tune grain`` (CRF 23) for the noise types and ``-crf 20`` otherwise. ffmpeg
picked ``yuv444p`` (H.264 High 4:4:4 Predictive) from the RGB input. :func:`encode_h264` runs the
same encoder settings on the ffmpeg that the ``imageio-ffmpeg`` wheel ships, with the frames piped
as raw ``rgb24`` (the bytes equal those of the PNG route), and adds what makes the bytes
reproducible: a single x264 thread, no varying metadata, and SIMD only in x264's cpu-independent mode.

x264's output depends on the instruction sets it uses unless told otherwise: its assembly differs
from its C code in floating-point details (MB-tree's ``mbtree_propagate_cost`` uses the approximate
``rcpps`` reciprocal, whose last bits are implementation-defined), and on one AMD EPYC plain AVX2
gave other MP4s than the C code. x264's ``cpu-independent=1`` mode swaps exactly those routines for
exact ones, so its SIMD code gives the plain C code's bytes at every CPU level. That is the default
(``simd=True``): 2-3x faster at ``veryslow`` and byte-identical to ``simd=False``, which runs x264's
plain C code (``asm=0``) as earlier releases did. ffmpeg's own code (the rgb24 -> yuv444p step, a
small share of the time) runs without SIMD in both modes (``-cpuflags 0``).

The TFDS ``Video`` feature stores one encoded image per frame: :func:`encode_frames_lossless`
writes those PNGs with Pillow at a fixed compression level.
"""
from __future__ import annotations

import functools
import io
import os
import re
import subprocess
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Optional, Sequence, Union

import cv2
import imageio_ffmpeg
import numpy as np
from PIL import Image, features

from schemas.imagenet_p import CRF20_RATE_CONTROL, GRAIN_RATE_CONTROL, PRESETS

__all__ = ["FRAME_RATE", "PIXEL_FORMAT", "PRESETS", "PNG_COMPRESS_LEVEL", "X264_PLAIN_C", "X264_CPU_INDEPENDENT",
           "X264_CPU_LEVELS", "VideoEncoderError", "VideoSource", "ffmpeg_executable", "check_frames", "rate_control",
           "x264_params", "ffmpeg_command", "encode_h264", "decode_video", "encode_frames_lossless",
           "decode_frames_lossless", "encoder_versions", "x264_cpu_capabilities", "host_cpu_levels",
           "encoder_settings", "read_video"]

FRAME_RATE = 1
"""Frames per second of every MP4 (the reference's ``-r 1 -framerate 1``)."""

PIXEL_FORMAT = "yuv444p"
"""Encoded pixel format: full-resolution chroma, what ffmpeg chose for the reference's RGB input."""


PNG_COMPRESS_LEVEL = 6
"""zlib level of the lossless frame PNGs (Pillow, no optimisation pass, no metadata chunks)."""
DECODE_THREADS = 1
"""FFmpeg threads of one ``cv2.VideoCapture`` (:func:`decode_video`)."""

_REPRODUCIBLE_OUTPUT = ("-map_metadata", "-1", "-fflags", "+bitexact", "-flags:v", "+bitexact")
"""Muxer and codec flags that keep library versions and other metadata out of the MP4."""

_NO_SIMD_FFMPEG = ("-cpuflags", "0")
"""Global ffmpeg option: no CPU-specific code in ffmpeg's own libraries (the rgb24 -> yuv444p step)."""

X264_PLAIN_C = "asm=0"
"""x264 parameter of the plain C path (``simd=False``): no assembly whatever the CPU."""

X264_CPU_INDEPENDENT = "cpu-independent=1"
"""x264 parameter of the SIMD path (``simd=True``): assembly, but only routines whose results do
not depend on the CPU (x264 >= core 164), so the bytes equal the plain C path's."""

X264_CPU_LEVELS = ("SSE2", "SSSE3", "SSE4.2", "AVX", "AVX2", "AVX512")
"""x264 ``asm=`` names of the x86 instruction-set levels, lowest first (each implies the ones before)."""

_CPU_CAPABILITIES = re.compile(r"using cpu capabilities: ([^\n]*)")

_X264_CORE = re.compile(rb"x264 - core \d+(?: r\d+ [0-9a-f]+)?")


class VideoEncoderError(RuntimeError):
    """The ffmpeg binary is missing, lacks libx264, or failed on an encode."""


VideoSource = Union[bytes, bytearray, memoryview, str, os.PathLike]


@functools.lru_cache(maxsize=1)
def ffmpeg_executable() -> str:
    """Path of the ffmpeg binary shipped by ``imageio-ffmpeg``, checked to have libx264.

    ``imageio-ffmpeg`` honours the ``IMAGEIO_FFMPEG_EXE`` environment variable (and falls back to
    a system ffmpeg when its own binary is missing), so another build can be used; the bytes then
    change with the build, and :func:`encoder_versions` records which one made a release.

    Raises
    ------
    VideoEncoderError
        If no binary is found or runs, or the binary has no libx264.
    """
    try:
        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError as error:
        raise VideoEncoderError(f"no ffmpeg binary: reinstall the imageio-ffmpeg wheel for this platform "
                                f"or set IMAGEIO_FFMPEG_EXE ({error})") from error
    try:
        encoders = subprocess.run([exe, "-hide_banner", "-encoders"], capture_output=True, text=True)
    except OSError as error:
        raise VideoEncoderError(f"cannot run ffmpeg at {exe!r} ({error}); check IMAGEIO_FFMPEG_EXE "
                                "or reinstall imageio-ffmpeg") from error
    if not re.search(r"^\s*V\S*\s+libx264\s", encoders.stdout, flags=re.MULTILINE):
        raise VideoEncoderError(f"ffmpeg at {exe} has no libx264 encoder (`ffmpeg -encoders`); "
                                "use a GPL build such as the one imageio-ffmpeg ships")
    return exe


def check_frames(frames: np.ndarray) -> None:
    """Raise ``ValueError`` unless ``frames`` is a non-empty uint8 (T, H, W, 3) RGB array."""
    if not isinstance(frames, np.ndarray):
        raise ValueError(f"frames must be a numpy.ndarray of dtype uint8 and shape (T, H, W, 3), "
                         f"got {type(frames).__name__}")
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3 or 0 in frames.shape:
        raise ValueError(f"frames must be a non-empty uint8 array of shape (T, H, W, 3) with T, H, "
                         f"W >= 1; got {frames.dtype} array of shape {frames.shape}")


def rate_control(noise: bool) -> tuple:
    """x264 rate-control options of the reference: ``-tune grain`` (CRF 23) for noise, else CRF 20."""
    return GRAIN_RATE_CONTROL if noise else CRF20_RATE_CONTROL


def x264_params(simd: bool = True, cpu_level: Optional[str] = None) -> str:
    """The ``-x264-params`` value of a release encode.

    Parameters
    ----------
    simd : bool
        True: SIMD in cpu-independent mode; False: plain C (``asm=0``).
    cpu_level : str, optional
        With ``simd``, an x264 ``asm=`` value that caps the instruction sets (``'0'``, ``'SSE2'``,
        ..., ``'AVX512'``); None lets x264 use the host's best. It must not exceed the host's
        capabilities (x264 would run instructions the CPU lacks).
    """
    if not simd:
        return X264_PLAIN_C
    return X264_CPU_INDEPENDENT + ("" if cpu_level is None else f":asm={cpu_level}")


def ffmpeg_command(width: int, height: int, output: str, *, noise: bool, preset: str = "veryslow",
                   threads: int = 1, simd: bool = True, cpu_level: Optional[str] = None) -> list:
    """The ffmpeg argument list that reads raw rgb24 frames on stdin and writes ``output`` (MP4).

    Parameters
    ----------
    width, height : int
        Frame size in pixels.
    output : str
        Path of the MP4 to write (the MP4 muxer needs a seekable file, not a pipe).
    noise : bool
        True for the noise perturbations (``-tune grain``), False for the rest (``-crf 20``).
    preset : str
        One of :data:`PRESETS`.
    threads : int
        x264 threads, >= 1. The bytes depend on it.
    simd : bool
        True: x264's SIMD code in cpu-independent mode; False: x264's plain C code. Both give
        the same bytes on every CPU; ffmpeg's own code runs without SIMD either way.
    cpu_level : str, optional
        With ``simd``: cap on x264's instruction sets (see :func:`x264_params`).

    Raises
    ------
    ValueError
        If ``preset`` is unknown or ``threads`` < 1.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown x264 preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    return [ffmpeg_executable(), "-hide_banner", "-loglevel", "error", *_NO_SIMD_FFMPEG,
            "-f", "rawvideo", "-pix_fmt", "rgb24", "-video_size", f"{width}x{height}",
            "-framerate", str(FRAME_RATE), "-i", "pipe:0",
            "-vcodec", "libx264", *rate_control(noise), "-preset", preset, "-threads", str(int(threads)),
            "-x264-params", x264_params(simd, cpu_level), "-pix_fmt", PIXEL_FORMAT, *_REPRODUCIBLE_OUTPUT,
            "-f", "mp4", "-y", output]


def encode_h264(frames: np.ndarray, *, noise: bool, preset: str = "veryslow", threads: int = 1,
                simd: bool = True, cpu_level: Optional[str] = None) -> bytes:
    """Encode a frame sequence as the reference's H.264 MP4, reproducibly.

    Parameters
    ----------
    frames : numpy.ndarray
        uint8, shape (T, H, W, 3), RGB, T >= 1.
    noise : bool
        True for gaussian/shot/speckle noise (``-tune grain``, CRF 23), False otherwise (CRF 20).
    preset : str
        x264 preset, one of :data:`PRESETS`; the reference used ``'veryslow'``.
    threads : int
        x264 threads, >= 1. The bytes depend on the count; keep 1 for releases.
    simd : bool
        True (default): x264's SIMD code in cpu-independent mode, 2-3x faster at ``veryslow``;
        False: x264's plain C code. The bytes are the same either way, on every CPU.
    cpu_level : str, optional
        With ``simd``: cap on x264's instruction sets (see :func:`x264_params`); None = the host's best.

    Returns
    -------
    bytes
        The MP4 file: one yuv444p H.264 stream at :data:`FRAME_RATE` fps, T frames, no metadata
        beyond what the codec and container require.

    Raises
    ------
    ValueError
        On a bad ``frames`` array, preset or thread count.
    VideoEncoderError
        If ffmpeg is unusable or the encode fails (the message holds ffmpeg's error output).
    """
    check_frames(frames)
    _, height, width, _ = frames.shape
    with tempfile.TemporaryDirectory(prefix="imagenet-cp-video-") as workdir:
        output = os.path.join(workdir, "video.mp4")
        command = ffmpeg_command(width, height, output, noise=noise, preset=preset, threads=threads,
                                 simd=simd, cpu_level=cpu_level)
        result = subprocess.run(command, input=np.ascontiguousarray(frames).tobytes(), capture_output=True)
        if result.returncode != 0:
            raise VideoEncoderError(f"ffmpeg failed (exit {result.returncode}): "
                                    f"{result.stderr.decode(errors='replace').strip()[-2000:]}")
        return Path(output).read_bytes()


def _read_capture(path: str) -> np.ndarray:
    """Every frame ``cv2.VideoCapture`` (FFmpeg backend) reads from ``path``, as RGB.

    One decoding thread: H.264 decoding is bit-exact whatever the threads, and at 224 pixels
    FFmpeg's frame threads cost 15 % more CPU than they save (the callers decode several videos
    side by side)."""
    capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, DECODE_THREADS])
    frames = []
    try:
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    finally:
        capture.release()
    if not frames:
        raise ValueError(f"OpenCV decoded no frames from {path!r}: not a readable video")
    return np.stack(frames)


def decode_video(video: VideoSource) -> np.ndarray:
    """Decode an MP4 as the reference evaluator does: ``cv2.VideoCapture``, then BGR -> RGB.

    Parameters
    ----------
    video : bytes or path-like
        The MP4 file's bytes (written to a temporary file, since OpenCV reads paths) or its path.

    Returns
    -------
    numpy.ndarray
        uint8, shape (T, H, W, 3), RGB: every frame until the first failed read.

    Raises
    ------
    ValueError
        If the path does not exist, the input is empty or of another type, or no frame decodes.
    """
    if isinstance(video, (bytes, bytearray, memoryview)):
        if len(video) == 0:
            raise ValueError("video bytes are empty")
        with tempfile.TemporaryDirectory(prefix="imagenet-cp-video-") as workdir:
            path = os.path.join(workdir, "video.mp4")
            Path(path).write_bytes(video)
            return _read_capture(path)
    if isinstance(video, (str, os.PathLike)):
        if not os.path.isfile(video):
            raise ValueError(f"no video file at {os.fspath(video)!r}")
        return _read_capture(os.fspath(video))
    raise ValueError(f"video must be MP4 bytes or a path, got {type(video).__name__}")


def encode_frames_lossless(frames: np.ndarray) -> list:
    """Each frame as a PNG, for the TFDS ``Video`` feature (which stores encoded frames).

    Pillow, compression level :data:`PNG_COMPRESS_LEVEL`, no optimisation pass and no metadata
    chunks, so the bytes depend only on the pixels and the zlib version.

    Parameters
    ----------
    frames : numpy.ndarray
        uint8, shape (T, H, W, 3), RGB.

    Returns
    -------
    list of bytes
        T RGB 8-bit PNG files, in frame order.
    """
    check_frames(frames)
    encoded = []
    for frame in frames:
        buffer = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(frame)).save(buffer, format="PNG",
                                                          compress_level=PNG_COMPRESS_LEVEL)
        encoded.append(buffer.getvalue())
    return encoded


def decode_frames_lossless(pngs: Sequence[bytes]) -> np.ndarray:
    """Inverse of :func:`encode_frames_lossless`: PNG bytes -> uint8 (T, H, W, 3) RGB.

    Raises
    ------
    ValueError
        If ``pngs`` is empty, or an entry is not an RGB image or differs in size from the first.
    """
    if len(pngs) == 0:
        raise ValueError("no PNG frames to decode")
    frames = []
    for index, png in enumerate(pngs):
        with Image.open(io.BytesIO(png)) as image:
            if image.mode != "RGB":
                raise ValueError(f"frame {index} is a {image.mode} image; expected RGB")
            frames.append(np.asarray(image))
    if len({frame.shape for frame in frames}) != 1:
        raise ValueError(f"frames differ in size: {sorted({frame.shape for frame in frames})}")
    return np.stack(frames)


@functools.lru_cache(maxsize=1)
def encoder_versions() -> dict:
    """Versions of everything that shapes the encoded bytes, for ``release.json``.

    Returns
    -------
    dict
        ``imageio-ffmpeg`` (the wheel), ``ffmpeg`` (the binary's version string), ``libx264``
        (the x264 core, and revision when the build records it, read from the stream's SEI),
        ``pillow`` and ``zlib`` (the lossless PNG frames).
    """
    exe = ffmpeg_executable()
    banner = subprocess.run([exe, "-hide_banner", "-version"], capture_output=True, text=True).stdout
    ffmpeg_version = re.match(r"ffmpeg version (\S+)", banner)
    probe = encode_h264(np.zeros((1, 16, 16, 3), np.uint8), noise=False, preset="ultrafast")
    core = _X264_CORE.search(probe)
    return {
        "imageio-ffmpeg": metadata.version("imageio-ffmpeg"),
        "ffmpeg": ffmpeg_version.group(1) if ffmpeg_version else banner.splitlines()[0],
        "libx264": core.group(0).decode().removeprefix("x264 - ") if core else None,
        "pillow": metadata.version("pillow"),
        "zlib": features.version("zlib"),
    }


@functools.lru_cache(maxsize=2)
def x264_cpu_capabilities(simd: bool = True) -> str:
    """The CPU capabilities x264 reports for a release encode on this host (its own log line).

    Returns
    -------
    str
        e.g. ``'MMX2 SSE2Fast SSSE3 SSE4.2 AVX FMA3 BMI2 AVX2 AVX512'``, or ``'none!'`` for the
        plain C path.
    """
    with tempfile.TemporaryDirectory(prefix="imagenet-cp-video-") as workdir:
        command = ffmpeg_command(16, 16, os.path.join(workdir, "probe.mp4"), noise=False, preset="ultrafast",
                                 simd=simd)
        command[command.index("error")] = "info"
        result = subprocess.run(command, input=bytes(16 * 16 * 3), capture_output=True)
    match = _CPU_CAPABILITIES.search(result.stderr.decode(errors="replace"))
    if result.returncode != 0 or not match:
        raise VideoEncoderError(f"cannot read x264's CPU capabilities (exit {result.returncode}): "
                                f"{result.stderr.decode(errors='replace').strip()[-500:]}")
    return match.group(1).strip()


def host_cpu_levels() -> tuple:
    """Every x264 ``asm=`` level this host can run, plain C first: ``'0'``, then the names of
    :data:`X264_CPU_LEVELS` that x264 detects here (e.g. up to ``'AVX512'``)."""
    detected = x264_cpu_capabilities(True).split()
    # x264 reports SSE2 as SSE2Fast / SSE2Slow; the other names appear as themselves
    present = {name for name in X264_CPU_LEVELS
               if any(token == name or (name == "SSE2" and token.startswith("SSE2")) for token in detected)}
    return ("0",) + tuple(name for name in X264_CPU_LEVELS if name in present)


def encoder_settings(simd: bool = True, preset: str = "veryslow", threads: int = 1) -> dict:
    """What a release records about its encodes: encoder, settings and the CPU level x264 used."""
    return {"encoder": "libx264 via ffmpeg", "preset": preset, "threads": threads,
            "x264_params": x264_params(simd), "simd": simd,
            "mode": "simd-cpu-independent" if simd else "plain-c",
            "ffmpeg_cpuflags": _NO_SIMD_FFMPEG[1], "metadata": "none (-map_metadata -1, +bitexact)",
            "cpu_capabilities": x264_cpu_capabilities(simd)}


def read_video(path: str) -> np.ndarray:
    """Frames of the MP4 at ``path`` on any file system :mod:`pipelines.formats.storage` reaches, as
    :func:`decode_video` reads them (a local file directly; any other through its bytes)."""
    from pipelines.formats import storage  # Beam's file systems: not for the commands that check arguments first

    return decode_video(path if storage.is_local(path) else storage.read_bytes(path))
