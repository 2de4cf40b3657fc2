"""verify and package cannot be fooled: every tampering of a built release fails verification,
package refuses it, and nothing outside a release is ever packed."""
import hashlib
import json
import os
import shutil

import pytest

from pipelines.release.package import PackageError, package_release
from pipelines.release.verify import verify_release
from schemas.release import CHECKSUMS, RELEASE_JSON, SOURCES
from scripts.cli import main as cli

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out


def _rows(release, part="manifest/contrast_1.jsonl"):
    return [json.loads(line) for line in (release / part).read_text().splitlines()]


def _drop_sum(release, path):
    lines = (release / CHECKSUMS).read_text().splitlines(keepends=True)
    (release / CHECKSUMS).write_text("".join(line for line in lines if not line.rstrip("\n").endswith("  " + path)))


def _relist(release, path):
    """Rewrite the SHA256SUMS line of ``path`` to its current digest (a careful tamperer)."""
    digest = hashlib.sha256((release / path).read_bytes()).hexdigest()
    lines = (release / CHECKSUMS).read_text().splitlines()
    (release / CHECKSUMS).write_text("".join(
        (f"{digest}  {path}" if line.endswith("  " + path) else line) + "\n" for line in lines))


def delete_file_and_its_line(release, outside):
    path = _rows(release)[0]["path"]
    (release / path).unlink()
    _drop_sum(release, path)


def plant_symlinked_folder(release, outside):
    os.symlink(outside, release / "ImageNet-C" / "contrast" / "certs")


def plant_symlinked_file(release, outside):
    path = release / _rows(release)[0]["path"]
    path.unlink()
    os.symlink(outside / "secret.txt", path)


def empty_extra_folder(release, outside):
    (release / "ImageNet-C" / "contrast" / "3").mkdir()


def delete_checksums(release, outside):
    (release / CHECKSUMS).unlink()


def outputs_of_a_previous_input(release, outside):
    row = _rows(release)[0]
    stale = release / "ImageNet-C" / "contrast" / "1" / row["wnid"] / "ILSVRC2012_val_00049999.JPEG"
    stale.write_bytes((release / row["path"]).read_bytes())


def fifo_in_the_tree(release, outside):
    os.mkfifo(release / "ImageNet-C" / "pipe")


def counts_edited_consistently(release, outside):
    document = json.loads((release / RELEASE_JSON).read_text())
    document["counts"]["images"] += 1
    (release / RELEASE_JSON).write_text(json.dumps(document))
    _relist(release, RELEASE_JSON)


def manifest_row_deleted_with_its_file(release, outside):
    part = "manifest/contrast_1.jsonl"
    lines = (release / part).read_text().splitlines(keepends=True)
    path = json.loads(lines[0])["path"]
    (release / part).write_text("".join(lines[1:]))
    (release / path).unlink()
    _drop_sum(release, path)
    _relist(release, part)


def checksum_line_escaping_the_release(release, outside):
    with open(release / CHECKSUMS, "a") as stream:
        stream.write(f"{hashlib.sha256(b'x').hexdigest()}  ../outside/secret.txt\n")


def sources_line_dropped(release, outside):
    lines = (release / SOURCES).read_text().splitlines(keepends=True)
    (release / SOURCES).write_text("".join(lines[1:]))
    _relist(release, SOURCES)


TAMPERINGS = {
    delete_file_and_its_line: "is not listed in SHA256SUMS",
    plant_symlinked_folder: "symlink (a release holds no links): ImageNet-C/contrast/certs",
    plant_symlinked_file: "symlink (a release holds no links)",
    empty_extra_folder: "extra: ImageNet-C/contrast/3/",
    delete_checksums: "SHA256SUMS not found",
    outputs_of_a_previous_input: "extra: ImageNet-C/contrast/1/",
    fifo_in_the_tree: "not a regular file (device, socket or fifo): ImageNet-C/pipe",
    counts_edited_consistently: "release.json: input.images is 8, counts.images 9",
    manifest_row_deleted_with_its_file: "manifest digest differs",
    checksum_line_escaping_the_release: "lists a path outside the release",
    sources_line_dropped: "input checksum",
}


@pytest.fixture()
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    for index in range(5):
        (folder / f"cert{index}.pem").write_text("not yours\n")
    (folder / "secret.txt").write_text("secret\n")
    return folder


@pytest.mark.parametrize("tamper", list(TAMPERINGS), ids=[t.__name__ for t in TAMPERINGS])
def test_every_tampering_fails_verify_and_package(sample_release, tmp_path, outside, tamper, capsys):
    release = tmp_path / "release"
    shutil.copytree(sample_release[0], release, symlinks=True)
    tamper(release, outside)
    report = verify_release(str(release))
    assert not report.ok
    assert TAMPERINGS[tamper] in report.text(), report.text()
    assert cli(["verify", str(release)]) == 1
    with pytest.raises(PackageError, match="fails verification, not packed"):
        package_release(str(release), str(tmp_path / "packages"))
    assert not (tmp_path / "packages").exists()
    capsys.readouterr()
    assert cli(["package", str(release)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "fails verification" in err
    assert not (release / "packages").exists()


def test_an_intact_release_packs_only_listed_files(sample_release, tmp_path):
    release = tmp_path / "release"
    shutil.copytree(sample_release[0], release, symlinks=True)
    assert verify_release(str(release)).ok
    os.symlink(tmp_path / "elsewhere", tmp_path / "linked-packages")
    with pytest.raises(PackageError, match="is a link"):
        package_release(str(release), str(tmp_path / "linked-packages"))
    os.symlink(release, tmp_path / "linked-release")  # the folder named by the user may be a link
    assert package_release(str(tmp_path / "linked-release"))
    assert verify_release(str(release)).ok and verify_release(str(tmp_path / "linked-release")).ok
    with pytest.raises(PackageError, match="not a release folder"):
        package_release(str(tmp_path / "missing"))


def test_debug_shows_the_traceback(sample_release, tmp_path, capsys):
    (tmp_path / "tars").write_text("a file where the tars' folder should be")
    argv = ["package", "--output", str(tmp_path / "tars"), str(sample_release[0])]  # options before the folder
    assert cli(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("imagenet-cp package: error: ") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and str(tmp_path / "tars") in err
    with pytest.raises(OSError):
        cli(["--debug", *argv])


def test_verify_skips_the_folder_lock_under_its_real_name():
    from pipelines.release import output_folder
    from pipelines.release import verify
    assert verify.LOCK_FILE == output_folder.LOCK_FILE
