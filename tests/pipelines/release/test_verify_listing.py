"""verify reads SHA256SUMS as a stream into a table on disk: it refuses the file as the strict parser
does, with the same messages, compares it with the tree in SQL and deletes the table (no Beam)."""
import hashlib
import tempfile

import pytest

from pipelines.release import verify
from schemas.release import CHECKSUMS, checksum_line


@pytest.fixture()
def temporary(tmp_path, monkeypatch):
    """The folder the tables are made in, to see that none is left."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _tree(root, files: dict) -> None:
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)


def _list(root, files: dict, extra_lines: str = "") -> None:
    lines = "".join(checksum_line(hashlib.sha256(data).hexdigest(), path) for path, data in files.items())
    (root / CHECKSUMS).write_text(lines + extra_lines)


@pytest.mark.parametrize("where", [0, 95, 96, -1])
def test_a_file_that_is_not_utf8_gets_the_strict_parsers_message(tmp_path, monkeypatch, temporary, where):
    data = bytearray(("0" * 64 + "  x/caf\u00e9\n").encode() * 4)
    if where == -1:
        data = data[:-2]  # the file ends inside the é
    else:
        data[where] = 0xC3 if where == 96 else 0xFF  # 96: a cut character across the chunks of 97 bytes
    (tmp_path / CHECKSUMS).write_bytes(bytes(data))
    monkeypatch.setattr(verify, "CHUNK_BYTES", 97)
    with pytest.raises(ValueError) as parsed:
        verify.parse_checksums(bytes(data))
    report = verify.verify_checksums(str(tmp_path))
    assert report.problems == [str(parsed.value)], report.problems
    assert list(temporary.iterdir()) == []


def test_the_tree_is_compared_with_the_listing(tmp_path, temporary):
    tmp_path = tmp_path / "release"
    files = {"a/b/one.txt": b"1", "a/b/two.txt": b"2", "a/three.txt": b"3", "top.txt": b"4"}
    _tree(tmp_path, files)
    _list(tmp_path, files, checksum_line("0" * 64, "../outside.txt") + checksum_line("0" * 64, "gone/four.txt"))
    (tmp_path / "a/b/two.txt").write_bytes(b"changed")
    _tree(tmp_path, {"a/extra.txt": b"5", "stale/old.txt": b"6"})
    (tmp_path / "a/empty").mkdir()
    (tmp_path / "kept").mkdir()
    report = verify.verify_checksums(str(tmp_path), empty_folders=lambda listed: {"kept", "needed"})
    assert report.problems == [f"{CHECKSUMS} lists a path outside the release: '../outside.txt'"]
    assert report.missing == ["gone/four.txt", "needed/"]
    assert report.extra == ["a/empty/", "a/extra.txt", "stale/", "stale/old.txt"]
    assert report.changed == ["a/b/two.txt"] and report.checked == 5
    assert list(temporary.iterdir()) == []


def test_a_path_listed_twice_is_reported_as_the_strict_parser_reports_it(tmp_path, temporary):
    tmp_path = tmp_path / "release"
    files = {"a.txt": b"1", "b.txt": b"2"}
    _tree(tmp_path, files)
    _list(tmp_path, files, checksum_line(hashlib.sha256(b"1").hexdigest(), "a.txt"))
    with pytest.raises(ValueError) as parsed:
        verify.read_checksums(str(tmp_path))
    report = verify.verify_release(str(tmp_path))
    assert report.problems == [str(parsed.value)] == [f"{CHECKSUMS} line 3 lists 'a.txt' a second time"]
    assert list(temporary.iterdir()) == []


def test_walk_tree_streams_what_scan_tree_gathers(tmp_path):
    _tree(tmp_path, {"a/b/one.txt": b"1", "top.txt": b"2"})
    (tmp_path / "link").symlink_to(tmp_path / "top.txt")
    found = sorted(verify.walk_tree(str(tmp_path)))
    assert found == [(verify.FILE, "a/b/one.txt"), (verify.FILE, "top.txt"), (verify.FOLDER, "a"),
                     (verify.FOLDER, "a/b"), (verify.PROBLEM, "symlink (a release holds no links): link")]
    assert verify.scan_tree(str(tmp_path)) == ({"a/b/one.txt", "top.txt"}, {"a", "a/b"},
                                               ["symlink (a release holds no links): link"])
