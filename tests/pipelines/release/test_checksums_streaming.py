"""SHA256SUMS is read and rewritten as a stream when a build publishes: the entries are those of the
strict parser, chunk boundaries change nothing, and memory does not grow with the number of lines
(a full ImageNet-C lists 4.75 million files)."""
import hashlib
import tracemalloc

import pytest

from pipelines.release import verify
from pipelines.release.publish import add_checksum_lines
from schemas.release import CHECKSUMS, checksum_line


def _listing(count: int, start: int = 0) -> dict:
    return {f"ImageNet-C/fog/3/n{index:08d}/ILSVRC2012_val_{index:08d}.JPEG": hashlib.sha256(b"%d" % index).hexdigest()
            for index in range(start, start + count)}


def _write(folder, entries: dict, last_newline: bool = True) -> bytes:
    text = "".join(checksum_line(digest, path) for path, digest in entries.items())
    data = (text if last_newline else text[:-1]).encode("utf-8")
    (folder / CHECKSUMS).write_bytes(data)
    return data


@pytest.mark.parametrize("last_newline", [True, False])
def test_iter_checksums_gives_the_strict_parsers_entries_across_chunk_boundaries(tmp_path, monkeypatch, last_newline):
    entries = _listing(500)
    data = _write(tmp_path, entries, last_newline)
    monkeypatch.setattr(verify, "CHUNK_BYTES", 97)  # lines cut at every place
    assert list(verify.iter_checksums(str(tmp_path))) == list(verify.parse_checksums(data).items())


def test_iter_checksums_names_the_bad_line(tmp_path, monkeypatch):
    lines = [checksum_line(d, p) for p, d in _listing(40).items()]
    lines[31] = lines[31].replace("  ", "\r ", 1)
    (tmp_path / CHECKSUMS).write_text("".join(lines))
    monkeypatch.setattr(verify, "CHUNK_BYTES", 64)
    with pytest.raises(ValueError, match="line 32"):
        list(verify.iter_checksums(str(tmp_path)))


def test_add_checksum_lines_replaces_in_place_and_appends_in_path_order(tmp_path):
    entries = _listing(30)
    _write(tmp_path, entries)
    replaced = next(iter(list(entries)[7:8]))
    update = {replaced: "f" * 64, "z/new.json": "a" * 64, "b/new.parquet": "b" * 64}
    add_checksum_lines(str(tmp_path), update)
    expected = {**entries, replaced: "f" * 64, "b/new.parquet": "b" * 64, "z/new.json": "a" * 64}
    assert (tmp_path / CHECKSUMS).read_text() == "".join(checksum_line(d, p) for p, d in expected.items())


def test_add_checksum_lines_keeps_memory_flat_in_the_number_of_lines(tmp_path):
    peaks = []
    for count in (20_000, 200_000):  # 2.4 MB and 24 MB of SHA256SUMS
        folder = tmp_path / str(count)
        folder.mkdir()
        _write(folder, _listing(count))
        tracemalloc.start()
        add_checksum_lines(str(folder), {"README.md": "c" * 64})
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert (folder / CHECKSUMS).read_text().endswith(checksum_line("c" * 64, "README.md"))
    # a dict of every line would take about 300 bytes a line (60 MB at 200,000 lines)
    assert peaks[1] < 8 << 20 and peaks[1] < 2 * peaks[0] + (1 << 20), peaks
