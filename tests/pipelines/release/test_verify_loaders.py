"""verify checks what the loaders read (TFDS records, ImageNet-P MP4s, WebDataset shards), parses
SHA256SUMS as ``sha256sum --strict -c`` does, package refuses an --output inside the release, and
build, verify and package print the release digest (the SHA-256 of SHA256SUMS)."""
import hashlib
import io
import json
import shutil
import subprocess
import tarfile

import pytest

from pipelines.formats.tfrecord import decode_example, encode_example, frame_record, iter_records
from pipelines.formats.webdataset import sample_key
from pipelines.release.publish import DIGEST_LABEL
from pipelines.release.verify import parse_checksums, verify_release
from schemas.release import CHECKSUMS
from scripts.cli import main as cli

SHA256SUM = shutil.which("sha256sum")


def _relist(release, path):
    """Rewrite the SHA256SUMS line of ``path`` to its current digest (a careful tamperer)."""
    digest = hashlib.sha256((release / path).read_bytes()).hexdigest()
    lines = (release / CHECKSUMS).read_text().splitlines()
    if not any(line.endswith("  " + path) for line in lines):
        lines.append(f"{digest}  {path}")
    (release / CHECKSUMS).write_text("".join(
        (f"{digest}  {path}" if line.endswith("  " + path) else line) + "\n" for line in lines))


def _rows(release, part):
    return [json.loads(line) for line in (release / part).read_text().splitlines()]


def _sha256sum_accepts(release) -> bool:
    return subprocess.run([SHA256SUM, "--strict", "-c", "--quiet", CHECKSUMS], cwd=release,
                          capture_output=True).returncode == 0


def _digest_printed(output: str) -> str:
    line = output.strip().splitlines()[-1]
    assert line.startswith(DIGEST_LABEL + ": "), output
    return line.split(": ", 1)[1]


def _sha256sum_of_checksums(release) -> str:
    return subprocess.run([SHA256SUM, CHECKSUMS], cwd=release, capture_output=True, text=True,
                          check=True).stdout.split()[0]


@pytest.fixture()
def release(sample_release, tmp_path):
    """A copy of the session's sample release, to tamper with."""
    copy = tmp_path / "release"
    shutil.copytree(sample_release[0], copy)
    return copy


@pytest.fixture(scope="session")
def p_release(tmp_path_factory):
    """The smallest ImageNet-P build: one video."""
    output = tmp_path_factory.mktemp("p") / "release"
    code = cli(["build-p", "--output", str(output), "--limit", "1", "--perturbations", "brightness",
                "--preset", "ultrafast", "--workers", "1"])
    assert code == 0
    return output


# --- SHA256SUMS as sha256sum parses it ---------------------------------------------------------

def test_parse_checksums_names_the_line_of_another_line_break():
    digest = "0" * 64
    assert parse_checksums(f"{digest}  a\n\n{digest.upper()} *b".encode()) == {"a": digest, "b": digest}
    for bad in ("\v", "\r", "\f", "\x1c", "\x85", "\u2028"):
        with pytest.raises(ValueError, match="line 2 holds a line break other than"):
            parse_checksums(f"{digest}  a\n{digest}  b{bad}{digest}  c\n".encode())
    with pytest.raises(ValueError, match="malformed SHA256SUMS line 1"):
        parse_checksums(b"garbage\n")


#: name -> SHA256SUMS text -> tampered text; every one is refused by verify and by sha256sum --strict -c.
LINE_TAMPERS = {
    "vertical tab for the first line break": lambda text: text.replace("\n", "\v", 1),
    "form feed": lambda text: text.replace("\n", "\f", 1),
    "file separator \\x1c": lambda text: text.replace("\n", "\x1c", 1),
    "NEL": lambda text: text.replace("\n", "\x85", 1),
    "line separator U+2028": lambda text: text.replace("\n", "\u2028", 1),
    "a lone carriage return": lambda text: text.replace("\n", "\r", 1),
    "a malformed line": lambda text: text + "not a checksum line\n",
}


@pytest.mark.skipif(SHA256SUM is None, reason="needs GNU sha256sum")
@pytest.mark.parametrize("tamper", LINE_TAMPERS.values(), ids=LINE_TAMPERS.keys())
def test_verify_and_sha256sum_agree_on_a_tampered_checksums_file(release, tamper):
    assert verify_release(str(release)).ok and _sha256sum_accepts(release)
    text = (release / CHECKSUMS).read_text(encoding="utf-8")
    (release / CHECKSUMS).write_text(tamper(text), encoding="utf-8", newline="")
    report = verify_release(str(release))
    assert not report.ok
    assert not _sha256sum_accepts(release)
    assert any("line" in problem for problem in report.problems), report.text()


@pytest.mark.skipif(SHA256SUM is None, reason="needs GNU sha256sum")
def test_crlf_is_refused_although_sha256sum_accepts_it(release):
    """The one deliberate difference: GNU sha256sum strips a \\r before the \\n; verify refuses it."""
    text = (release / CHECKSUMS).read_text(encoding="utf-8")
    (release / CHECKSUMS).write_text(text.replace("\n", "\r\n"), encoding="utf-8", newline="")
    assert _sha256sum_accepts(release)
    report = verify_release(str(release))
    assert not report.ok and "line 1 holds a line break other than" in report.text()


# --- TFDS records against the manifests ---------------------------------------------------------

def _shard(release):
    return _rows(release, "manifest/contrast_1.jsonl")[0]["shard"]


@pytest.mark.skipif(SHA256SUM is None, reason="needs GNU sha256sum")
def test_a_shard_changed_with_its_checksum_line_fails_verify(release):
    shard = _shard(release)
    data = bytearray((release / shard).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (release / shard).write_bytes(bytes(data))
    _relist(release, shard)
    assert _sha256sum_accepts(release)  # SHA256SUMS alone cannot see it
    report = verify_release(str(release))
    assert not report.ok
    assert any(p.startswith(f"{shard}: corrupted record") for p in report.problems), report.text()


def test_a_reframed_shard_with_other_images_fails_verify(release):
    """Valid CRCs, but the records hold other image bytes and labels than the manifest."""
    shard = _shard(release)
    with open(release / shard, "rb") as stream:
        examples = [decode_example(data) for _, data in iter_records(stream)]
    first = examples[0]
    first["image"] = [examples[-1]["image"][0] + b"\0"]
    first["label"] = [(first["label"][0] + 1) % 1000]
    (release / shard).write_bytes(b"".join(
        frame_record(encode_example({k: v[0] for k, v in e.items()})) for e in examples))
    _relist(release, shard)
    text = verify_release(str(release)).text()
    assert f"{shard} record 1" in text and "its image differs from the manifest's sha256" in text
    assert "label" in text


def test_a_missing_record_fails_verify(release):
    shard = _shard(release)
    with open(release / shard, "rb") as stream:
        records = [data for _, data in iter_records(stream)]
    (release / shard).write_bytes(b"".join(frame_record(r) for r in records[:-1]))
    _relist(release, shard)
    assert f"{shard}: {len(records) - 1} records, the manifest {len(records)}" in verify_release(str(release)).text()


def test_an_extra_or_swapped_record_fails_verify(release):
    """The records of a shard are read as its manifest rows stream by: one record too many is
    counted to the end, and two records in each other's place fail at both rows."""
    shard = _shard(release)
    with open(release / shard, "rb") as stream:
        records = [data for _, data in iter_records(stream)]
    (release / shard).write_bytes(b"".join(frame_record(r) for r in records + records[-1:]))
    _relist(release, shard)
    assert f"{shard}: {len(records) + 1} records, the manifest {len(records)}" in verify_release(str(release)).text()
    (release / shard).write_bytes(b"".join(frame_record(r) for r in [records[1], records[0], *records[2:]]))
    _relist(release, shard)
    text = verify_release(str(release)).text()
    assert f"{shard} record 1" in text and f"{shard} record 2" in text and "records, the manifest" not in text


# --- ImageNet-P videos ----------------------------------------------------------------------------

@pytest.mark.beam
def test_p_release_videos_and_records_verify(p_release, tmp_path):
    assert verify_release(str(p_release)).ok
    copy = tmp_path / "p"
    shutil.copytree(p_release, copy)
    row = _rows(copy, "manifest/brightness.jsonl")[0]
    video = copy / row["path"]
    video.write_bytes(video.read_bytes()[: video.stat().st_size // 2])  # a truncated download
    _relist(copy, row["path"])
    text = verify_release(str(copy)).text()
    assert f"{row['path']}: OpenCV decodes" in text or f"{row['path']}: does not decode" in text


def _rewrite_video_record(release, row, frames_of):
    """Replace the ``video`` frames of ``row``'s record by ``frames_of(pngs)`` (valid CRCs), relisted."""
    shard = release / row["shard"]
    with open(shard, "rb") as stream:
        examples = [decode_example(data) for _, data in iter_records(stream)]
    index = [json.loads(line)["key"] for line in
             (release / f"manifest/{row['key'].split('/')[0]}.jsonl").read_text().splitlines()].index(row["key"])
    examples[index]["video"] = frames_of(examples[index]["video"])
    shard.write_bytes(b"".join(frame_record(encode_example(
        {k: (list(v) if k == "video" else v[0]) for k, v in e.items()})) for e in examples))
    _relist(release, row["shard"])


def _one_pixel_changed(pngs):
    """The PNG frames with one value of the first frame changed: another valid PNG of the same size."""
    from pipelines.formats.video import decode_frames_lossless, encode_frames_lossless

    frames = decode_frames_lossless(pngs)
    frames[0, 0, 0, 0] ^= 1
    return encode_frames_lossless(frames)


@pytest.mark.beam
def test_a_p_record_whose_frames_differ_from_its_mp4_fails_verify(p_release, tmp_path):
    """The TFDS frames are compared with the frames OpenCV decodes from the MP4 (one value changed)."""
    copy = tmp_path / "p"
    shutil.copytree(p_release, copy)
    row = _rows(copy, "manifest/brightness.jsonl")[0]
    _rewrite_video_record(copy, row, _one_pixel_changed)
    report = verify_release(str(copy))
    assert f"its frames differ from those OpenCV decodes from {row['path']}" in report.text(), report.text()
    assert len(report.problems) == 1


@pytest.mark.beam
def test_a_p_record_with_a_corrupted_png_frame_fails_verify(p_release, tmp_path):
    copy = tmp_path / "p"
    shutil.copytree(p_release, copy)
    row = _rows(copy, "manifest/brightness.jsonl")[0]
    _rewrite_video_record(copy, row, lambda pngs: [pngs[0][:len(pngs[0]) // 2]] + list(pngs[1:]))
    assert "its frames do not decode" in verify_release(str(copy)).text()


@pytest.mark.beam
def test_the_mp4s_of_an_unreadable_shard_are_still_decoded(p_release, tmp_path):
    """A shard whose first record is corrupted: its MP4s are checked all the same."""
    copy = tmp_path / "p"
    shutil.copytree(p_release, copy)
    row = _rows(copy, "manifest/brightness.jsonl")[0]
    shard = copy / row["shard"]
    shard.write_bytes(shard.read_bytes()[:20])
    _relist(copy, row["shard"])
    video = copy / row["path"]
    video.write_bytes(video.read_bytes()[: video.stat().st_size // 2])
    _relist(copy, row["path"])
    text = verify_release(str(copy)).text()
    assert f"{row['shard']}: corrupted record" in text
    assert f"{row['path']}: OpenCV decodes" in text or f"{row['path']}: does not decode" in text


@pytest.mark.beam
def test_lossless_frames_are_checked_against_the_manifest(tmp_path):
    output = tmp_path / "lossless"
    assert cli(["build-p", "--output", str(output), "--limit", "1", "--perturbations", "brightness",
                "--preset", "ultrafast", "--workers", "1", "--tfds-frames", "lossless"]) == 0
    assert verify_release(str(output)).ok
    row = _rows(output, "manifest/brightness.jsonl")[0]
    _rewrite_video_record(output, row, _one_pixel_changed)
    assert "its frames differ from the manifest's frames_sha256" in verify_release(str(output)).text()


# --- WebDataset shards, when the release has them ------------------------------------------------

def _write_webdataset(release, rows, tamper=False):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for index, row in enumerate(rows):
            data = (release / row["path"]).read_bytes() + (b"\0" if tamper and index == 0 else b"")
            stem = sample_key(row["path"])
            for name, payload in ((f"{stem}.jpg", data), (f"{stem}.cls", str(row["label"]).encode())):
                info = tarfile.TarInfo(name)
                info.size = len(payload)
                archive.addfile(info, io.BytesIO(payload))
    shard = "webdataset/contrast_1/contrast_1-000000.tar"
    (release / shard).parent.mkdir(parents=True, exist_ok=True)
    (release / shard).write_bytes(buffer.getvalue())
    _relist(release, shard)
    return shard


def test_webdataset_shards_are_checked_when_present(release):
    rows = _rows(release, "manifest/contrast_1.jsonl")
    _write_webdataset(release, rows)
    assert verify_release(str(release)).ok
    _write_webdataset(release, rows, tamper=True)
    text = verify_release(str(release)).text()
    assert f"webdataset/contrast_1/{sample_key(rows[0]['path'])}: the sample's bytes differ from the tree file's" in text
    assert text.count("differ from the tree file's") == 1     # each shard is read once


def test_a_webdataset_file_outside_a_config_folder_fails_verify(release):
    shard = _write_webdataset(release, _rows(release, "manifest/contrast_1.jsonl"))
    (release / shard).rename(release / "webdataset" / "contrast_1-000000.tar")
    _relist(release, "webdataset/contrast_1-000000.tar")
    assert "webdataset/contrast_1-000000.tar: not in a config's folder" in verify_release(str(release)).text()


# --- package --output inside the release ---------------------------------------------------------

def test_package_refuses_an_output_inside_the_release(release, capsys):
    before = sorted(p.relative_to(release) for p in release.rglob("*"))
    inside = release / json.loads((release / "release.json").read_text())["tree"] / "contrast"
    capsys.readouterr()
    assert cli(["package", str(release), "--output", str(inside)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is inside the release" in err[0]
    assert sorted(p.relative_to(release) for p in release.rglob("*")) == before


# --- the release digest -----------------------------------------------------------------------------

@pytest.mark.beam
@pytest.mark.skipif(SHA256SUM is None, reason="needs GNU sha256sum")
def test_build_verify_and_package_print_the_release_digest(tmp_path, capsys):
    output = tmp_path / "built"
    assert cli(["build-c", "--output", str(output), "--limit", "2", "--corruptions", "contrast",
                "--severities", "1", "--workers", "1"]) == 0
    expected = _sha256sum_of_checksums(output)
    assert _digest_printed(capsys.readouterr().out) == expected
    assert cli(["verify", str(output)]) == 0
    assert _digest_printed(capsys.readouterr().out) == expected
    assert cli(["package", str(output)]) == 0
    assert _digest_printed(capsys.readouterr().out) == expected


# --- every published field: record features, the card, croissant.json ----------------------------

def _rewrite_shard(release, shard, change):
    """Re-frame ``shard`` with ``change(examples)`` applied (valid CRCs) and relist it."""
    with open(release / shard, "rb") as stream:
        examples = [decode_example(data) for _, data in iter_records(stream)]
    change(examples)
    (release / shard).write_bytes(b"".join(
        frame_record(encode_example({k: v[0] for k, v in e.items()})) for e in examples))
    _relist(release, shard)


def _package_refuses(release, capsys, name):
    capsys.readouterr()
    assert cli(["package", str(release), "--output", str(release.parent / "packed")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fails verification, not packed" in err[0] and name in err[0], err
    assert not (release.parent / "packed").exists()


def test_a_record_whose_file_name_changed_fails_verify_and_package(release, capsys):
    shard = _shard(release)
    row = _rows(release, "manifest/contrast_1.jsonl")[0]
    expected = row["image_key"].rsplit("/", 1)[-1]

    def rename(examples):
        assert examples[0]["file_name"] == [expected.encode()]
        examples[0]["file_name"] = [b"ILSVRC2012_val_00049999.JPEG"]
    _rewrite_shard(release, shard, rename)
    assert _sha256sum_accepts(release)
    text = verify_release(str(release)).text()
    assert (f"{shard} record 1 ({row['key']}): file_name 'ILSVRC2012_val_00049999.JPEG', the manifest "
            f"{expected!r}") in text, text
    _package_refuses(release, capsys, shard)


def test_a_record_without_a_declared_feature_or_with_another_fails_verify(release):
    shard = _shard(release)

    def drop_and_add(examples):
        del examples[0]["file_name"]
        examples[1]["comment"] = [b"mirrored"]
    _rewrite_shard(release, shard, drop_and_add)
    text = verify_release(str(release)).text()
    assert f"{shard} record 1" in text and "lacks the feature 'file_name' that features.json declares" in text
    assert "holds the feature 'comment' that features.json does not declare" in text
    assert "feature 'comment' has no check against the manifest" in text


@pytest.mark.parametrize("name, edit", [
    ("README.md", lambda text: text.replace("ImageNet", "ImageNet (mirror)", 1)),
    ("croissant.json", lambda text: text.replace('"name"', '"name" ', 1)),
])
def test_an_edited_card_or_croissant_fails_verify_and_package(release, capsys, name, edit):
    assert verify_release(str(release)).ok
    path = release / name
    edited = edit(path.read_text(encoding="utf-8"))
    assert edited != path.read_text(encoding="utf-8")
    path.write_text(edited, encoding="utf-8")
    _relist(release, name)
    assert _sha256sum_accepts(release)
    report = verify_release(str(release))
    assert not report.ok and not report.changed
    assert [p for p in report.problems if p.startswith(f"{name}: edited: differs from")], report.text()
    _package_refuses(release, capsys, name)


def test_an_edited_index_fails_verify(release):
    """A column check_index does not compare (the severity) changed: the index made again differs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(release / "metadata.parquet")
    column = table.schema.get_field_index("severity")
    severities = table.column("severity").to_pylist()
    edited = table.set_column(column, table.schema.field(column), pa.array([6] + severities[1:], pa.int32()))
    pq.write_table(edited, release / "metadata.parquet", compression="zstd")
    _relist(release, "metadata.parquet")
    report = verify_release(str(release))
    assert report.problems == ["metadata.parquet: edited: differs from the index release.json and the manifests "
                               "make"], report.text()


def test_a_webdataset_sample_of_another_member_type_fails_verify(release):
    rows = _rows(release, "manifest/contrast_1.jsonl")
    shard = _write_webdataset(release, rows)
    with tarfile.open(release / shard) as archive:
        members = [(m.name, archive.extractfile(m).read()) for m in archive]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for index, (name, payload) in enumerate(members):
            info = tarfile.TarInfo(name.replace(".jpg", ".png") if index == 0 else name)
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
    (release / shard).write_bytes(buffer.getvalue())
    _relist(release, shard)
    text = verify_release(str(release)).text()
    assert f"webdataset/contrast_1/{sample_key(rows[0]['path'])}: members .cls, .png, the manifest .jpg and .cls" in text


# --- the exit status is the verdict -------------------------------------------------------------

ABORT_AT_EXIT = ("import ctypes, sys; libc = ctypes.CDLL(None)\n"  # a native library that aborts at exit:
                 "getattr(libc, '__cxa_atexit')(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)\n")
"""Python that makes the process abort in C ``exit()``, as a native thread alive during the C++
static destructors does ("terminate called without an active exception", status 134)."""


def _imagenet_cp(*argv, prelude="", **options):
    import os
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[3])
    code = prelude + "import sys; from scripts.cli import main; sys.argv = ['imagenet-cp'] + sys.argv[1:]; main()"
    return subprocess.Popen([sys.executable, "-c", code, *argv], cwd=root, env=dict(os.environ, PYTHONPATH=root),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)


def test_the_exit_status_is_the_command_s_even_when_a_native_library_aborts_at_exit(release):
    import sys

    control = subprocess.run([sys.executable, "-c", ABORT_AT_EXIT + "sys.exit(0)"], capture_output=True)
    assert control.returncode == -6  # the simulation aborts a plain exit (SIGABRT)
    intact = _imagenet_cp("verify", str(release), prelude=ABORT_AT_EXIT)
    out, err = intact.communicate(timeout=300)
    assert intact.returncode == 0 and out.strip().splitlines()[-2].startswith("OK: "), (out, err)
    (release / "README.md").write_text("edited\n")
    tampered = _imagenet_cp("verify", str(release), prelude=ABORT_AT_EXIT)
    out, err = tampered.communicate(timeout=300)
    assert tampered.returncode == 1 and "changed: README.md" in out, (out, err)


def test_verify_exits_0_every_time_on_an_intact_release(release):
    """30 verify processes, three at a time (a loaded machine), each exits with its verdict."""
    codes = []
    for _ in range(10):
        runs = [_imagenet_cp("verify", str(release)) for _ in range(3)]
        for run in runs:
            out, err = run.communicate(timeout=300)
            codes.append(run.returncode)
            assert run.returncode == 0, (out, err)
    assert codes == [0] * 30
