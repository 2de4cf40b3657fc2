"""``storage.write_new``: a tree file created in place, anything already there replaced atomically (no Beam)."""
import hashlib
import os

import pytest

from pipelines.formats import storage


def test_a_new_file_is_created_in_place_and_described(tmp_path):
    info = storage.write_new(str(tmp_path), "T/fog/3/n1/a.JPEG", b"jpeg bytes", group="fog_3")
    assert (tmp_path / "T/fog/3/n1/a.JPEG").read_bytes() == b"jpeg bytes"
    assert (info.path, info.size, info.group) == ("T/fog/3/n1/a.JPEG", 10, "fog_3")
    assert info.sha256 == hashlib.sha256(b"jpeg bytes").hexdigest()
    assert not (tmp_path / ".tmp").exists()  # no temporary file made


def test_a_short_file_left_by_an_interrupted_write_is_replaced_whole(tmp_path):
    target = tmp_path / "T/a.JPEG"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"jp")  # what a killed writer leaves
    info = storage.write_new(str(tmp_path), "T/a.JPEG", b"jpeg bytes")
    assert target.read_bytes() == b"jpeg bytes" and info.size == 10


def test_a_symlink_or_hard_link_at_the_path_is_replaced_not_written_through(tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"keep me")
    (tmp_path / "T").mkdir()
    (tmp_path / "T/link.JPEG").symlink_to(elsewhere)
    os.link(elsewhere, tmp_path / "T/hard.JPEG")
    storage.write_new(str(tmp_path), "T/link.JPEG", b"new")
    storage.write_new(str(tmp_path), "T/hard.JPEG", b"new")
    assert elsewhere.read_bytes() == b"keep me"
    assert not (tmp_path / "T/link.JPEG").is_symlink()
    assert (tmp_path / "T/link.JPEG").read_bytes() == (tmp_path / "T/hard.JPEG").read_bytes() == b"new"


def test_a_write_that_fails_part_way_leaves_no_file(tmp_path, monkeypatch):
    """Two bytes written, then a full disk: the short file is removed again."""
    real_write, calls = os.write, []

    def short_then_full(descriptor, data):
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return real_write(descriptor, bytes(data[:2]))

    with monkeypatch.context() as patch:
        patch.setattr(storage.os, "write", short_then_full)
        with pytest.raises(OSError, match="No space left"):
            storage.write_new(str(tmp_path), "T/a.JPEG", b"jpeg bytes")
    assert calls == [10, 8]  # the rest after a short write is written again
    assert not (tmp_path / "T/a.JPEG").exists()
