"""release.json as one declared type (schemas.release.Release): new and old releases load through
it, and a release read and written again gives the same bytes."""
import json

import pytest

from schemas.editions import release_identity
from schemas.records import ManifestRecord
from schemas.release import (RELEASE_FORMAT, CSettings, FilteredSettings, PSettings, Release, ReleaseCounts, ReleaseInput,
                             ReleaseManifest, ReleaseTfds, VcrSettings, dumps)

NEW = {
    "benchmark": "c", "edition": "cifar", "tree": "CIFAR-10-C", "format": RELEASE_FORMAT,
    "config": {"corruptions": ["fog"], "severities": [1, 5], "seed": 0, "jpeg_quality": None,
               "examples_per_shard": 2048, "limit": None, "image_ids_sha256": None, "formats": ["webdataset"]},
    "encoding": "npy", "image_size": 32, "labels": "CIFAR-10-C/labels.npy", "source_family": "cifar10",
    "tfds": {"data_dir": "tfds", "name": "cifar10_corrupted", "version": "1.0.0", "split": "test",
             "configs": ["fog_1", "fog_5"]},
    "input": {"kind": "cifar", "sha256": "ab" * 32, "images": 8},
    "counts": {"images": 8, "outputs": 16, "failures": 0, "outputs_per_config": {"fog_1": 8, "fog_5": 8}},
    "manifest": {"parts": ["manifest/fog_1.jsonl", "manifest/fog_5.jsonl"], "records": 16, "sha256": "cd" * 32},
    "library_versions": {"numpy": "2.4.6", "python": "3.11.7"},
}

OLD = {  # an ImageNet-C release made before benchmark, source_family, encoding, image_size and config.formats
    "edition": "imagenet-c", "tree": "imagenet-c", "format": RELEASE_FORMAT,
    "config": {"corruptions": ["fog"], "severities": [3], "seed": 0},
    "tfds": {"data_dir": "tfds", "name": "imagenet2012_corrupted", "version": "3.1.0", "split": "validation",
             "configs": ["fog_3"]},
    "input": {"sha256": "ef" * 32, "images": 2},
    "counts": {"images": 2, "outputs": 2, "failures": 0, "outputs_per_config": {"fog_3": 2}},
    "manifest": {"parts": ["manifest/fog_3.jsonl"], "records": 2, "sha256": "01" * 32},
    "library_versions": [{"numpy": "1.26.4"}, {"numpy": "1.26.3"}],
    "retired_field": {"kept": True},  # a key this version does not declare
}


@pytest.mark.parametrize("document", [NEW, OLD], ids=["new", "old"])
def test_a_release_read_and_written_again_gives_the_same_bytes(document):
    text = dumps(document)
    release = Release.from_text(text)
    assert release.to_json() == document
    assert release.text() == text


def test_an_old_release_loads_with_the_later_fields_absent():
    release = Release.from_text(dumps(OLD))
    assert (release.benchmark, release.source_family, release.encoding, release.image_size) == (None,) * 4
    assert release.input.kind is None and release.input.images == 2
    assert release.formats == ("tfds", "tree") and release.config.severities == (3,)  # the default formats
    assert release.manifest_parts == ("manifest/fog_3.jsonl",)
    assert release.extra == {"retired_field": {"kept": True}}
    assert tuple(release_identity(release)) == ("imagenet", "c")


def test_a_new_release_is_read_through_its_declared_fields():
    release = Release.from_json(NEW)
    assert release.counts == ReleaseCounts(images=8, outputs=16, failures=0,
                                           outputs_per_config={"fog_1": 8, "fog_5": 8})
    assert release.tfds.configs == ("fog_1", "fog_5") and release.tfds.split == "test"
    assert release.formats == ("webdataset",) and release.labels == "CIFAR-10-C/labels.npy"
    assert release.extra == {} and tuple(release_identity(release)) == ("cifar", "c")


def test_the_fields_an_edition_and_the_driver_set_make_the_written_document():
    edition = Release(edition="cifar", benchmark="c", tree="CIFAR-10-C", config=CSettings.from_json(NEW["config"]), encoding="npy",
                      image_size=32, labels="CIFAR-10-C/labels.npy", source_family="cifar10",
                      tfds=ReleaseTfds(data_dir="tfds", name="cifar10_corrupted", version="1.0.0", split="test",
                                       configs=("fog_1", "fog_5")),
                      input=ReleaseInput(kind="cifar"))
    sealed = Release(**{**edition.__dict__, "format": RELEASE_FORMAT,
                        "input": ReleaseInput(kind="cifar", sha256="ab" * 32, images=8),
                        "counts": ReleaseCounts(images=8, outputs=16, failures=0,
                                                outputs_per_config={"fog_1": 8, "fog_5": 8}),
                        "manifest": ReleaseManifest(parts=("manifest/fog_1.jsonl", "manifest/fog_5.jsonl"),
                                                    records=16, sha256="cd" * 32),
                        "library_versions": {"numpy": "2.4.6", "python": "3.11.7"}})
    assert sealed.text() == dumps(NEW)
    assert "labels" not in Release(edition="imagenet", tree="ImageNet-C").to_json()  # unset fields are not written


def test_a_null_value_is_kept_as_written():
    document = {**OLD, "labels": None}
    assert Release.from_json(document).to_json() == document


def test_release_json_that_is_not_an_object_is_refused():
    with pytest.raises(ValueError, match="not a JSON object"):
        Release.from_text(json.dumps([1, 2]))


def test_a_manifest_line_round_trips_through_its_record():
    row = {"key": "fog/3/n01440764/a.JPEG", "path": "ImageNet-C/fog/3/n01440764/a.JPEG", "sha256": "ab" * 32,
           "bytes": 1234, "shard": None, "wnid": "n01440764", "label": 0, "corruption": "fog", "severity": 3}
    record = ManifestRecord.from_json(row)
    assert (record.key, record.size, record.shard, record.label) == (row["key"], 1234, None, 0)
    assert record.value("severity") == 3 and record.value("sha256") == "ab" * 32 and record.value("seed") is None
    assert record.to_json() == row


A_O = {"edition": "imagenet-a", "tree": "imagenet-a", "format": RELEASE_FORMAT,
       "config": {"filter": {"task": "imagenet_a", "classes": "imagenet_a", "class_wnids": ["n01", "n02"],
                             "threshold": 0.15, "cap": 2, "primary_model": 0, "msp_cut": 0.0, "min_size": None,
                             "rules": {"R1": "r1"}},
                  "models": [{"model": "m", "mean": [0.5, 0.5, 0.5]}], "decisions_sha256": "ab" * 32,
                  "reviews_sha256": "cd" * 32, "file_names": {"p": "probability"}}}
P_OLD = {"edition": "cifar", "tree": "CIFAR-10-P",  # an old P release of an edition: no benchmark field
         "config": {"perturbations": ["rotate"], "difficulties": [1], "seed": 0}}
VCR = {"edition": "imagenet", "benchmark": "vcr", "tree": "vcr",
       "config": {"corruptions": ["blur"], "levels": 2, "seed": 0, "dv_resolution": "native", "limit": None}}


@pytest.mark.parametrize("document, kind", [(NEW, CSettings), (OLD, CSettings), (A_O, FilteredSettings),
                                            (P_OLD, PSettings), (VCR, VcrSettings)],
                         ids=["c", "old-c", "a", "old-p", "vcr"])
def test_the_config_is_read_as_its_benchmarks_type_and_written_back_key_for_key(document, kind):
    release = Release.from_json(document)
    assert type(release.config) is kind and release.to_json() == document
    assert Release.from_text(release.text()).text() == release.text()


def test_the_settings_are_read_by_attribute():
    assert Release.from_json(A_O).config.filter.cap == 2 and Release.from_json(A_O).config.filter.min_size is None
    assert Release.from_json(P_OLD).config.perturbations == ("rotate",)
    assert Release.from_json(VCR).config.dv_resolution == "native" and Release.from_json(VCR).config.limit is None
    assert Release.from_json(NEW).config.formats == ("webdataset",)


def test_the_run_fields_are_written_even_when_null():
    settings = CSettings(corruptions=("fog",), severities=(1,), seed=0)
    assert settings.with_run(2048, None, None).to_json() == {
        "corruptions": ["fog"], "severities": [1], "seed": 0, "examples_per_shard": 2048, "limit": None,
        "image_ids_sha256": None}
    assert settings.with_run(16, 5, "ab", ("tree",)).to_json()["formats"] == ["tree"]
