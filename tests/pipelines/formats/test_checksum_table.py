"""The disk-backed table of a SHA256SUMS: a dict in path order, repeated paths refused as the strict
parser refuses them, prefix queries in SQL, the comparison with a walked tree, the file deleted."""
import hashlib
import os

import pytest

from pipelines.formats import checksum_table
from pipelines.formats.checksum_table import ChecksumTable, ListedTwice, folder_and_parents, unsafe_path
from pipelines.release.verify import numbered_checksums, parse_checksums
from schemas.release import CHECKSUMS, checksum_line


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _entries(paths) -> list:
    return [(number, path, _digest(path)) for number, path in enumerate(paths, 1)]


PATHS = ["T/fog/3/n2/b.JPEG", "manifest/fog_3.jsonl", "T/fog/3/n2/a.JPEG", "T/clean/n1/c.JPEG", "README.md",
         "T/x.npy", "manifest/clean.jsonl", "T/é/n1/d.JPEG", "T/\U0001F600/e.JPEG", "manifest0"]


@pytest.fixture()
def table(tmp_path):
    with ChecksumTable.of(_entries(PATHS), str(tmp_path)) as made:
        yield made


def test_it_reads_as_the_dict_of_the_entries_in_path_order(table):
    expected = {path: _digest(path) for path in PATHS}
    assert list(table) == sorted(PATHS)  # code point order, as Python sorts
    assert len(table) == len(PATHS)
    assert dict(table.items()) == expected and list(table.items()) == sorted(expected.items())
    assert table["README.md"] == expected["README.md"] and table.get("T/x.npy") == expected["T/x.npy"]
    assert "README.md" in table and "T" not in table and 3 not in table
    assert table.get("nothing") is None
    with pytest.raises(KeyError):
        table["nothing"]


def test_prefix_queries(table):
    assert list(table.under("manifest/")) == ["manifest/clean.jsonl", "manifest/fog_3.jsonl"]  # not manifest0
    assert list(table.under("T/fog/3/")) == ["T/fog/3/n2/a.JPEG", "T/fog/3/n2/b.JPEG"]
    assert list(table.under("none/")) == [] and list(table.under("")) == sorted(PATHS)
    assert table.count_under("T/") == 6 and table.count_under("T/", nested=True) == 5  # T/x.npy lies at the top
    assert table.count_under("manifest") == 3
    assert list(table.folders_holding("T/")) == ["T/clean/n1", "T/fog/3/n2", "T/é/n1", "T/\U0001F600"]
    assert table.holds_files("T/fog/3/n2") and not table.holds_files("T/fog/3") and not table.holds_files("x")


def test_prefixes_ending_in_the_last_code_points(tmp_path):
    paths = ["a\U0010FFFF/x", "a\U0010FFFF\U0010FFFF", "b", "a\ud7ff/y", "a\ue000/z"]
    with ChecksumTable.of(_entries(paths), str(tmp_path)) as table:
        assert list(table.under("a\U0010FFFF")) == ["a\U0010FFFF/x", "a\U0010FFFF\U0010FFFF"]
        assert list(table.under("\U0010FFFF")) == []
        assert list(table.under("a\ud7ff")) == ["a\ud7ff/y"]


def test_a_path_listed_twice_is_refused_as_the_strict_parser_refuses_it(tmp_path, monkeypatch):
    monkeypatch.setattr(checksum_table, "BATCH_ROWS", 4)  # the repeat in a later batch, then in the same
    paths = [f"d/{index}" for index in range(10)]
    for first, again in ((1, 9), (5, 6)):
        listed = paths[:again] + [paths[first]] + paths[again:]
        data = "".join(checksum_line(_digest(p), p) for p in listed).encode()
        with pytest.raises(ValueError) as parsed:
            parse_checksums(data)
        with pytest.raises(ListedTwice) as filled:
            ChecksumTable.of(_entries(listed), str(tmp_path))
        assert str(filled.value) == str(parsed.value) == f"{CHECKSUMS} line {again + 1} lists {paths[first]!r} a second time"
    assert os.listdir(tmp_path) == []  # a refused table is deleted


def test_the_first_refused_line_is_reported_as_the_strict_parser_reports_it(tmp_path, monkeypatch):
    """A repeat before a malformed line is reported, not the line; the lines read before a malformed one
    are checked although they make no full batch."""
    monkeypatch.setattr(checksum_table, "BATCH_ROWS", 100)
    lines = [checksum_line(_digest(p), p) for p in ("a", "b", "a")] + ["not a checksum line\n"]
    (tmp_path / CHECKSUMS).write_text("".join(lines))
    with pytest.raises(ListedTwice, match="line 3 lists 'a'"):
        ChecksumTable.of(numbered_checksums(str(tmp_path)))
    (tmp_path / CHECKSUMS).write_text("".join(lines[1:]))
    with pytest.raises(ValueError, match="malformed SHA256SUMS line 3"):
        ChecksumTable.of(numbered_checksums(str(tmp_path)))


def test_unsafe_paths_are_kept_but_take_no_part_in_the_tree(tmp_path):
    assert [p for p in ("/etc/x", "a/../b", "a//b", "a\\b", "./a", "a/b") if unsafe_path(p)] == \
        ["/etc/x", "a/../b", "a//b", "a\\b", "./a"]
    paths = ["a/b/c.txt", "../outside/secret.txt", "a\\b", "top.txt"]
    with ChecksumTable.of(_entries(paths), str(tmp_path)) as table:
        assert table.unsafe() == ["../outside/secret.txt", "a\\b"] and "a\\b" in table and len(table) == 4
        table.add_found([("a", True), ("a/b", True), ("a/b/c.txt", False), ("a\\b", False), ("stale", True),
                         ("stale/old.txt", False), ("a", True), ("kept", True)])
        table.expect_empty(["kept", "gone"])
        assert list(table.missing()) == ["top.txt"]
        assert list(table.extra()) == ["a\\b", "stale/old.txt"]
        assert list(table.extra_folders()) == ["stale"]
        assert list(table.missing_folders()) == ["gone"]
        assert list(table.common()) == [("a/b/c.txt", _digest("a/b/c.txt"))]
        assert list(table.folders_holding("")) == ["a/b"]


def test_folders_are_every_folder_above_a_listed_file():
    assert list(folder_and_parents("a/b/c.txt")) == ["a/b", "a"] and list(folder_and_parents("c.txt")) == []


def test_the_file_is_deleted_when_closed(tmp_path):
    table = ChecksumTable(str(tmp_path))
    table.fill(_entries(["a"]))
    assert os.path.exists(table.path) and os.path.dirname(table.path) == str(tmp_path)
    table.close()
    table.close()  # again: nothing
    assert os.listdir(tmp_path) == []
    with pytest.raises(RuntimeError):
        with ChecksumTable(str(tmp_path)):
            raise RuntimeError("a failed check")
    assert os.listdir(tmp_path) == []


def test_memory_does_not_grow_with_the_entries(tmp_path, monkeypatch):
    import tracemalloc

    peaks = []
    for count in (20_000, 200_000):
        entries = ((n, f"T/fog/3/n{n // 50:08d}/ILSVRC2012_val_{n:08d}.JPEG", "ab" * 32) for n in range(1, count + 1))
        tracemalloc.start()
        with ChecksumTable.of(entries, str(tmp_path)) as table:
            assert len(table) == count and table.count_under("T/", nested=True) == count
            assert sum(1 for _ in table.under("T/fog/3/n00000001/")) == 50
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # a dict of the entries would take about 250 bytes an entry (50 MB at 200,000)
    assert peaks[1] < 2 * peaks[0] + (1 << 20), peaks
