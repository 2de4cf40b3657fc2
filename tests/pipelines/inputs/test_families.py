"""open_input: every source family read once, its family and class names known before the listing."""
import pytest

from schemas.editions import get_edition
from pipelines.inputs import families
from pipelines.inputs.families import open_input, write_cifar_sample, write_tinyimagenet_sample


def test_a_cifar_input_is_unpickled_once_from_open_to_listing(tmp_path, monkeypatch):
    root = write_cifar_sample(str(tmp_path / "in"))
    loaded = []
    real = families._load_pickle
    monkeypatch.setattr(families, "_load_pickle", lambda path: loaded.append(path) or real(path))
    opened = open_input(get_edition("cifar"), root)
    assert opened.family == "cifar10" and opened.class_names == families.CIFAR10_CLASSES
    index = opened.list(str(tmp_path / "out"))
    assert len(index.entries) == 8 and index.kind == "cifar"
    assert sorted(p.rsplit("/", 1)[-1] for p in loaded) == ["batches.meta", "test_batch"]  # each file once


def test_tinyimagenet_and_the_samples_say_family_and_class_names_before_listing(tmp_path):
    root = write_tinyimagenet_sample(str(tmp_path / "in"))
    opened = open_input(get_edition("tinyimagenet"), root)
    index = opened.list(str(tmp_path / "out"))
    assert opened.family == "tinyimagenet" and {e.wnid for e in index.entries} <= set(opened.class_names)
    sample = open_input(get_edition("tinyimagenet"), None)
    assert sample.class_names == opened.class_names and sample.list(str(tmp_path / "s")).kind == "sample"
    imagenet = open_input(get_edition("inception"), None)
    assert (imagenet.family, imagenet.class_names) == ("imagenet", None)
    assert imagenet.list(str(tmp_path / "i")).kind == "sample"


def test_an_input_of_another_family_is_refused_in_one_line(tmp_path):
    root = write_cifar_sample(str(tmp_path / "in"))
    with pytest.raises(ValueError, match="tiny-imagenet-200"):
        open_input(get_edition("tinyimagenet"), root)
