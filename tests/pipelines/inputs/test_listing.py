"""Listing inputs (folder, tar, TFDS split) into entries and failures, and inspecting images."""
import numpy as np
import pytest

from pipelines.inputs.listing import (classify, detect_kind, drop_duplicates, index_source, inspect_image,
                               read_entry, select_entries, source_note)
from schemas.records import Failure, Locator
from schemas.wnids import wnid_to_label


def test_classify_folder_flat_and_rejects():
    loc = Locator("/x")
    entry = classify("n01440764/a.JPEG", loc)
    assert (entry.key, entry.wnid, entry.label, entry.source) == ("n01440764/a.JPEG", "n01440764", 0, "n01440764/a.JPEG")
    flat = classify("ILSVRC2012_val_00000001.JPEG", loc)
    assert flat.key == "n01751748/ILSVRC2012_val_00000001.JPEG"  # line 1 of the TFDS ground truth
    assert flat.label == wnid_to_label()["n01751748"]
    for relative, reason in [("n01440764/a.txt", "not an image file"), ("x.JPEG", "no ground truth"),
                             ("ILSVRC2012_val_00050001.JPEG", "no ground truth"),
                             ("n0000/a.JPEG", "not one of the 1000"), ("n01440764/s/a.JPEG", "nested too deep"),
                             ("n01440764/.a.JPEG", "unsupported name"), ("n01440764/a\nb.JPEG", "unsupported name")]:
        result = classify(relative, loc)
        assert isinstance(result, Failure) and reason in result.reason, relative


def test_duplicates_keep_the_first_key_case_insensitively():
    entries = [classify(p, Locator(p)) for p in ("n01443537/A.JPEG", "n01440764/a.jpeg", "n01440764/A.JPEG")]
    kept, failures = drop_duplicates(entries)
    assert [e.key for e in kept] == ["n01440764/A.JPEG"]
    assert sorted(f.key for f in failures) == ["n01440764/a.jpeg", "n01443537/A.JPEG"]
    assert all("duplicate file name: n01440764/A.JPEG" in f.reason for f in failures)


def test_folder_listing_reports_every_bad_input(bad_input_folder, sample_folder, bad_inputs):
    index = index_source(str(bad_input_folder))
    assert index.kind == "folder"
    failures = {f.key: f.reason for f in index.failures}
    listing_failures = {k: r for k, r in bad_inputs[0].items()
                        if r not in ("truncated", "cannot decode", "decompression bomb")}
    for key, reason in listing_failures.items():
        matching = [r for k, r in failures.items() if k == key]
        assert matching and reason in matching[0], (key, failures)
    keys = [e.key for e in index.entries]
    assert keys == sorted(keys)
    undecodable = [k for k, r in bad_inputs[0].items() if r in ("truncated", "cannot decode", "decompression bomb")]
    assert len(keys) == len(list(sample_folder.glob("*/*.JPEG"))) + len(bad_inputs[1]) + len(undecodable)
    assert all(f.source == f.key or f.stage != "list" for f in index.failures if "duplicate" not in f.reason)


def test_tar_listing_matches_folder_listing(sample_tar, sample_folder):
    assert detect_kind(str(sample_tar)) == "tar"
    tar_index, folder_index = index_source(str(sample_tar)), index_source(str(sample_folder))
    assert [e.key for e in tar_index.entries] == [e.key for e in folder_index.entries]
    assert [read_entry(e) for e in tar_index.entries] == [read_entry(e) for e in folder_index.entries]
    (failure,) = tar_index.failures
    assert failure.key == "../ILSVRC2012_val_00000999.JPEG" and "escapes the input root" in failure.reason


def test_tfds_listing_matches_folder_listing(sample_tfds, sample_folder):
    assert detect_kind(str(sample_tfds)) == "tfds"
    tfds_index, folder_index = index_source(str(sample_tfds)), index_source(str(sample_folder))
    assert [e.key for e in tfds_index.entries] == [e.key for e in folder_index.entries]
    assert [read_entry(e) for e in tfds_index.entries] == [read_entry(e) for e in folder_index.entries]
    assert tfds_index.entries[0].source.startswith("imagenet2012-validation.tfrecord-0000")


def test_detect_kind_rejects_other_inputs(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        detect_kind(str(tmp_path / "missing"))
    (tmp_path / "x.zip").write_bytes(b"PK")
    with pytest.raises(ValueError, match="expected a folder, a .tar file"):
        detect_kind(str(tmp_path / "x.zip"))
    (tmp_path / "x.tar").write_bytes(b"\x1f\x8b not a tar")
    with pytest.raises(ValueError, match="not an uncompressed tar"):
        index_source(str(tmp_path / "x.tar"))


def test_select_by_ids_and_limit(sample_folder):
    index = index_source(str(sample_folder))
    first, second = index.entries[0], index.entries[1]
    chosen = select_entries(index, [first.key, second.file_name, "n01440764/missing.JPEG", ""])
    assert [e.key for e in chosen.entries] == [first.key, second.key]
    assert [(f.key, f.reason) for f in chosen.failures] == [
        ("n01440764/missing.JPEG", "listed in --image-ids but not in the input")]
    assert [e.key for e in select_entries(index, limit=3).entries] == [e.key for e in index.entries[:3]]
    with pytest.raises(ValueError, match="limit"):
        select_entries(index, limit=-1)


def test_inspect_image_and_notes(make_encoded, make_bomb):
    photo = np.zeros((8, 8, 3), np.uint8)
    png = make_encoded(photo, "RGB", "PNG")
    assert inspect_image(png) == {"format": "PNG", "mode": "RGB", "width": 8, "height": 8}
    assert source_note(inspect_image(png), "a.JPEG") == "PNG data behind a .jpeg name"
    cmyk = inspect_image(make_encoded(photo, "CMYK", "JPEG"))
    assert source_note(cmyk, "a.JPEG") == "CMYK image converted to RGB"
    assert source_note(inspect_image(make_encoded(photo, "RGB", "JPEG")), "a.JPEG") == ""
    for data, reason in [(b"", "not in any format"), (b"text", "not in any format"), (make_bomb(), "decompression bomb"),
                         (make_bomb(12_000, 12_000),  # over the pixel limit (Pillow's warning limit), too
                          r"^image of 12000x12000 pixels: 144,000,000 pixels, above the limit of 89,478,485 pixels$")]:
        with pytest.raises(ValueError, match=reason):
            inspect_image(data)


def test_inspect_image_refuses_with_bad_input(make_bomb):
    """What the header check refuses is a transforms.BadInput (a row of failures.jsonl), raised
    where it is found: the decode stages catch nothing else."""
    from transforms import BadInput

    for data in (b"", b"text", b"\xff\xd8\xff\xe0", make_bomb(), make_bomb(12_000, 12_000), make_bomb(1, 20_000)):
        with pytest.raises(BadInput):
            inspect_image(data)
