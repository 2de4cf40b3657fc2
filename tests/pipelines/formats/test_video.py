"""pipelines.formats.video: reproducible H.264 encodes with the reference's settings, cv2 decoding, PNG frames."""
from __future__ import annotations

import hashlib
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from skimage import data

from pipelines.formats.video import (FRAME_RATE, PIXEL_FORMAT, VideoEncoderError, decode_frames_lossless,
                             decode_video, encode_frames_lossless, encode_h264, encoder_versions,
                             ffmpeg_command, ffmpeg_executable)
from transforms import preprocess

REPO = Path(__file__).resolve().parents[3]
FRAMES = 5


def psnr(decoded: np.ndarray, original: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB over the whole sequence (peak 255)."""
    mse = np.mean((decoded.astype(np.float64) - original) ** 2)
    return float(10 * np.log10(255.0 ** 2 / mse))


def x264_options(mp4: bytes) -> str:
    """The option string x264 writes into the stream's SEI."""
    match = re.search(rb"options: ([^\x00]*)", mp4)
    assert match, "no x264 SEI in the stream"
    return match.group(1).decode()


@pytest.fixture(scope="module")
def panning() -> np.ndarray:
    """5 frames of a real 224x224 photograph shifted 0..4 px to the right (a crf-20 kind of input)."""
    x = preprocess(data.chelsea())
    return np.stack([np.roll(x, shift, axis=1) for shift in range(FRAMES)])


@pytest.fixture(scope="module")
def noisy() -> np.ndarray:
    """The clean photograph, then 4 Gaussian-noise copies (sigma 0.05), like a noise sequence."""
    x = preprocess(data.chelsea())
    rng = np.random.RandomState(0)
    copies = [np.clip(x + rng.normal(0, 0.05 * 255, x.shape), 0, 255).astype(np.uint8)
              for _ in range(FRAMES - 1)]
    return np.stack([x] + copies)


@pytest.fixture
def fresh_executable():
    """Forget the cached ffmpeg lookup before and after a test that changes it."""
    ffmpeg_executable.cache_clear()
    yield
    ffmpeg_executable.cache_clear()


def test_two_encodes_are_byte_identical(panning):
    assert encode_h264(panning, noise=False, preset="ultrafast") == \
        encode_h264(panning, noise=False, preset="ultrafast")


def test_another_process_gives_the_same_bytes(noisy, tmp_path):
    np.save(tmp_path / "frames.npy", noisy)
    code = ("import sys, numpy as np; from pipelines.formats.video import encode_h264; "
            "sys.stdout.buffer.write(encode_h264(np.load(sys.argv[1]), noise=True, preset='ultrafast'))")
    other = subprocess.run([sys.executable, "-c", code, str(tmp_path / "frames.npy")], cwd=REPO,
                           capture_output=True, check=True).stdout
    assert hashlib.sha256(other).hexdigest() == \
        hashlib.sha256(encode_h264(noisy, noise=True, preset="ultrafast")).hexdigest()


def test_bytes_equal_the_reference_png_route(noisy, tmp_path):
    """Piped rgb24 frames encode to the same MP4 as the reference's ``-r 1 -framerate 1 -i img%01d.png``."""
    for index, frame in enumerate(noisy):
        Image.fromarray(frame).save(tmp_path / f"img{index}.png")
    piped = ffmpeg_command(224, 224, str(tmp_path / "piped.mp4"), noise=True, preset="ultrafast")
    output_options = piped[piped.index("pipe:0") + 1:-1]
    reference_input = [ffmpeg_executable(), "-hide_banner", "-loglevel", "error",
                       "-r", "1", "-framerate", "1", "-i", str(tmp_path / "img%01d.png")]
    subprocess.run(reference_input + output_options + [str(tmp_path / "png.mp4")], check=True)
    assert (tmp_path / "png.mp4").read_bytes() == encode_h264(noisy, noise=True, preset="ultrafast")


def test_no_simd_veryslow_encode_runs_x264_plain_c_code(panning, tmp_path):
    """``simd=False`` (``--no-simd``): x264 reports no CPU capabilities, and the bytes equal the default's."""
    command = ffmpeg_command(224, 224, str(tmp_path / "video.mp4"), noise=False, preset="veryslow", simd=False)
    command[command.index("error")] = "info"
    log = subprocess.run(command, input=panning.tobytes(), capture_output=True, check=True).stderr.decode()
    assert "using cpu capabilities: none!" in log
    assert (tmp_path / "video.mp4").read_bytes() == encode_h264(panning, noise=False, simd=False) \
        == encode_h264(panning, noise=False)


def test_default_simd_encode_uses_the_cpu_in_cpu_independent_mode(panning, tmp_path):
    command = ffmpeg_command(224, 224, str(tmp_path / "video.mp4"), noise=False, preset="ultrafast")
    assert command[command.index("-x264-params") + 1] == "cpu-independent=1"
    command[command.index("error")] = "info"
    log = subprocess.run(command, input=panning.tobytes(), capture_output=True, check=True).stderr.decode()
    assert "using cpu capabilities:" in log and "capabilities: none!" not in log
    decoded = decode_video(encode_h264(panning, noise=False, preset="ultrafast", simd=True))
    assert psnr(decoded, panning) > 40


@pytest.mark.parametrize("noise", [False, True])
def test_cv2_reads_back_every_frame_close_to_the_input(panning, noisy, noise):
    frames = noisy if noise else panning
    decoded = decode_video(encode_h264(frames, noise=noise, preset="ultrafast"))
    assert decoded.shape == (FRAMES, 224, 224, 3) and decoded.dtype == np.uint8
    # measured: 42.0 dB (panning, CRF 20), 31.3 dB (noisy, grain, CRF 23)
    assert psnr(decoded, frames) > (40 if not noise else 29)


def test_decode_from_a_path(panning, tmp_path):
    path = tmp_path / "video.mp4"
    path.write_bytes(encode_h264(panning, noise=False, preset="ultrafast"))
    assert np.array_equal(decode_video(path), decode_video(path.read_bytes()))


@pytest.mark.parametrize("key, noise", [("shot_noise/3", True), ("rotate/1", False)])
def test_reference_frames_survive_the_encode(reference_p, key, noise):
    """Real ImageNet-P frames (the reference's lossless PNG content) through the release encode."""
    npz, _ = reference_p
    frames = npz[f"chelsea/{key}"]
    decoded = decode_video(encode_h264(frames, noise=noise, preset="ultrafast"))
    assert decoded.shape == frames.shape
    # measured at ultrafast: 30.4 dB (shot_noise/3, grain), 40.7 dB (rotate, CRF 20)
    assert psnr(decoded, frames) > (28 if noise else 38)


def test_noise_and_other_types_use_the_reference_rate_control(noisy):
    grain = encode_h264(noisy, noise=True, preset="medium")  # ultrafast turns deblock and AQ off
    crf20 = encode_h264(noisy, noise=False, preset="medium")
    assert grain != crf20
    grain_options, crf20_options = x264_options(grain), x264_options(crf20)
    # -tune grain: CRF 23, deblock -2:-2, psy_rd 1.00:0.25, aq strength 0.5, qcomp 0.8 (x264's grain tune)
    for option in ("crf=23.0", "deblock=1:-2:-2", "psy_rd=1.00:0.25", "aq=1:0.50", "qcomp=0.80"):
        assert option in grain_options
    for option in ("crf=20.0", "deblock=1:0:0", "qcomp=0.60"):
        assert option in crf20_options
    assert "threads=1 " in grain_options and "threads=1 " in crf20_options
    assert len(crf20) > len(grain)  # a lower CRF keeps more of the noise


def test_stream_is_yuv444p_high_444_at_one_fps(panning, tmp_path):
    path = tmp_path / "video.mp4"
    path.write_bytes(encode_h264(panning, noise=False, preset="ultrafast"))
    probe = subprocess.run([ffmpeg_executable(), "-hide_banner", "-i", str(path)],
                           capture_output=True, text=True).stderr
    stream = next(line for line in probe.splitlines() if "Video:" in line)
    assert "h264 (High 4:4:4 Predictive)" in stream
    assert f"{PIXEL_FORMAT}(" in stream and "224x224" in stream and f" {FRAME_RATE} fps" in stream
    assert not re.search(r"Lav[fc]\d", probe)  # no library versions in the metadata


@pytest.mark.parametrize("frames", [
    np.zeros((2, 8, 8, 3), np.float32),
    np.zeros((8, 8, 3), np.uint8),
    np.zeros((2, 8, 8, 4), np.uint8),
    np.zeros((0, 8, 8, 3), np.uint8),
    np.zeros((2, 0, 8, 3), np.uint8),
    [np.zeros((8, 8, 3), np.uint8)],
], ids=["float32", "3-d", "4-channels", "no-frames", "no-rows", "list"])
def test_bad_frames_raise_value_error(frames):
    with pytest.raises(ValueError, match=r"\(T, H, W, 3\)"):
        encode_h264(frames, noise=False)
    with pytest.raises(ValueError, match=r"\(T, H, W, 3\)"):
        encode_frames_lossless(frames)


@pytest.mark.parametrize("options, message", [
    ({"preset": "turbo"}, "valid presets: ultrafast"),
    ({"threads": 0}, "threads must be an integer >= 1"),
    ({"threads": 1.5}, "threads must be an integer >= 1"),
])
def test_bad_encoder_options_raise_value_error(panning, options, message):
    with pytest.raises(ValueError, match=message):
        encode_h264(panning, noise=False, **options)


@pytest.mark.parametrize("video, message", [
    (b"", "empty"),
    (b"not an mp4 file at all", "no frames"),
    ("/nonexistent/video.mp4", "no video file"),
    (np.zeros(3), "MP4 bytes or a path"),
])
def test_bad_video_raises_value_error(video, message):
    with pytest.raises(ValueError, match=message):
        decode_video(video)


def test_missing_ffmpeg_is_a_clear_error(fresh_executable, monkeypatch, tmp_path, panning):
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(tmp_path / "no-ffmpeg-here"))
    with pytest.raises(VideoEncoderError, match="cannot run ffmpeg"):
        encode_h264(panning, noise=False)


def test_ffmpeg_without_libx264_is_a_clear_error(fresh_executable, monkeypatch, tmp_path, panning):
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\necho ' V....D libopenh264           OpenH264 H.264'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(fake))
    with pytest.raises(VideoEncoderError, match="no libx264 encoder"):
        encode_h264(panning, noise=False)


def test_lossless_frames_round_trip_and_are_deterministic(noisy):
    pngs = encode_frames_lossless(noisy)
    assert len(pngs) == FRAMES and all(png.startswith(b"\x89PNG\r\n\x1a\n") for png in pngs)
    assert all(b"tIME" not in png and b"tEXt" not in png for png in pngs)
    assert pngs == encode_frames_lossless(noisy.copy())
    assert np.array_equal(decode_frames_lossless(pngs), noisy)


def test_decode_frames_lossless_rejects_bad_input(noisy):
    with pytest.raises(ValueError, match="no PNG frames"):
        decode_frames_lossless([])
    grey = io.BytesIO()
    Image.fromarray(noisy[0, ..., 0]).save(grey, format="PNG")
    with pytest.raises(ValueError, match="expected RGB"):
        decode_frames_lossless([grey.getvalue()])
    small = encode_frames_lossless(noisy[:, :8, :8])
    with pytest.raises(ValueError, match="differ in size"):
        decode_frames_lossless(encode_frames_lossless(noisy[:1]) + small[:1])


def test_encoder_versions_name_the_builds():
    versions = encoder_versions()
    assert set(versions) == {"imageio-ffmpeg", "ffmpeg", "libx264", "pillow", "zlib"}
    assert versions["libx264"].startswith("core ")
    assert all(isinstance(value, str) and value for value in versions.values())
