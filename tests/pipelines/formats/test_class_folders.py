"""Which class folders a tree holds and which of them a subset leaves empty (no Beam)."""
from __future__ import annotations

from pipelines.formats.class_folders import class_folder_parents, class_folders, expected_class_folders

NAMES = ("n1", "n2", "n3")


def test_parents_are_the_folders_above_class_folders_only():
    folders = ["ImageNet-C/fog/3/n1", "ImageNet-C/clean/n2", "ImageNet-C/fog", "tfds/x/fog_3/3.1.0"]
    assert class_folder_parents(folders, NAMES) == {"ImageNet-C/fog/3", "ImageNet-C/clean"}
    assert class_folders({"P/rotate"}, NAMES) == {"P/rotate/n1", "P/rotate/n2", "P/rotate/n3"}


def test_expected_empty_folders_come_from_the_listed_files_and_the_label_names(tmp_path):
    labels = "tfds/ds/fog_3/1.0.0/label.labels.txt"
    (tmp_path / labels).parent.mkdir(parents=True)
    (tmp_path / labels).write_text("n1\nn2\nn3\n")
    listed = [labels, "T/fog/3/n2/a.JPEG", "T/clean/n1/a.JPEG", "T/clean/n3/b.JPEG", "manifest/fog_3.jsonl"]
    assert expected_class_folders(str(tmp_path), listed, "T") == {"T/fog/3/n1", "T/fog/3/n3", "T/clean/n2"}
    assert expected_class_folders(str(tmp_path), listed[1:], "T") == set()  # no label names: none expected


def test_the_missing_class_folders_are_made_beside_the_ones_holding_files(tmp_path):
    from pipelines.formats.class_folders import make_class_folders

    (tmp_path / "T/fog/3/n2").mkdir(parents=True)
    (tmp_path / "T/fog/3/n2/a.JPEG").write_bytes(b"x")
    (tmp_path / "T/clean/n3").mkdir(parents=True)
    make_class_folders(str(tmp_path), ["T/fog/3/n2", "T/clean/n3"], NAMES)
    make_class_folders(str(tmp_path), ["T/fog/3/n2", "T/clean/n3"], NAMES)  # again: nothing to do, no error
    assert sorted(p.name for p in (tmp_path / "T/fog/3").iterdir()) == ["n1", "n2", "n3"]
    assert sorted(p.name for p in (tmp_path / "T/clean").iterdir()) == ["n1", "n2", "n3"]
    assert (tmp_path / "T/fog/3/n2/a.JPEG").read_bytes() == b"x"
    assert sorted(p.name for p in (tmp_path / "T").iterdir()) == ["clean", "fog"]


def test_a_worker_makes_a_parents_class_folders_before_its_first_file_once(tmp_path, monkeypatch):
    from pipelines.formats import class_folders, storage

    monkeypatch.setattr(class_folders, "_class_folders_made", set())
    class_folders.make_class_folders_once(str(tmp_path), "T/fog/3/n2", NAMES)
    assert sorted(p.name for p in (tmp_path / "T/fog/3").iterdir()) == ["n1", "n2", "n3"]
    storage.write_new(str(tmp_path), "T/fog/3/n2/a.JPEG", b"x")  # its folder is there: created in place
    (tmp_path / "T/fog/3/n1").rmdir()
    class_folders.make_class_folders_once(str(tmp_path), "T/fog/3/n3", NAMES)  # same parent: nothing again
    assert sorted(p.name for p in (tmp_path / "T/fog/3").iterdir()) == ["n2", "n3"]
    class_folders.make_class_folders_once(str(tmp_path), "T/other/x", NAMES)  # not a class folder: nothing
    assert not (tmp_path / "T/other").exists()
