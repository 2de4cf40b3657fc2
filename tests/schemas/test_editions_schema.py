"""The Edition declarations: TFDS names and datasets, layouts and package plans, as data."""
import pytest

from schemas.editions import EDITIONS
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES
from schemas.tfds import IMAGENET2012_CORRUPTED
from schemas.tfds_c import c_dataset

#: TFDS 4.9.10 cifar10_corrupted's corruption names (tensorflow_datasets 4.9.10 source), sorted as TFDS lists them.
TFDS_CIFAR10_NAMES = ("brightness", "contrast", "defocus_blur", "elastic", "fog", "frost", "frosted_glass_blur",
                      "gaussian_blur", "gaussian_noise", "impulse_noise", "jpeg_compression", "motion_blur",
                      "pixelate", "saturate", "shot_noise", "snow", "spatter", "speckle_noise", "zoom_blur")


def test_the_224_edition_is_tfds_imagenet2012_corrupted():
    layout = EDITIONS["imagenet"].c.layout()
    assert (layout.tfds.dataset, layout.tfds.version, layout.tfds.split) == (
        IMAGENET2012_CORRUPTED.name, IMAGENET2012_CORRUPTED.version, IMAGENET2012_CORRUPTED.split)
    assert c_dataset(EDITIONS["imagenet"]) is IMAGENET2012_CORRUPTED


def test_cifar10_corrupted_configs_are_tfds_own():
    dataset = c_dataset(EDITIONS["cifar"], "cifar10")
    assert (dataset.name, dataset.version, dataset.split) == ("cifar10_corrupted", "1.0.0", "test")
    own = [c for c in dataset.config_descriptions if c != "clean"]  # 'clean': ours (clean.npy), not TFDS's
    assert sorted({c.rsplit("_", 1)[0] for c in own}) == list(TFDS_CIFAR10_NAMES)
    assert len(own) == 95 and "frosted_glass_blur_1" in own and "clean" in dataset.config_descriptions
    features = dataset.features_json()
    assert '"numClasses": "10"' in features and '"encodingFormat": "png"' in features
    assert "file_name" not in features and dataset.metadata_files() == {}


@pytest.mark.parametrize("name", ["inception", "imagenet64", "tinyimagenet"])
def test_imagenet_style_editions_declare_jpeg_datasets_of_their_own(name):
    edition = EDITIONS[name]
    dataset = c_dataset(edition, class_names=("n01", "n02") if name == "tinyimagenet" else None)
    assert dataset.name != IMAGENET2012_CORRUPTED.name and dataset.split == "validation"
    assert f'"{edition.image_size}"' in dataset.features_json()
    assert set(dataset.config_descriptions) == {f"{c}_{s}" for c in CORRUPTIONS for s in SEVERITIES} | {"clean"}


def test_every_tree_is_unique_and_names_its_corruption_entries():
    trees = [layout.tree for e in EDITIONS.values() for layout in e.c.layouts.values()]
    assert len(trees) == len(set(trees))
    assert EDITIONS["cifar"].c.layout("cifar100").corruption_entry("fog") == "fog.npy"
    assert EDITIONS["tinyimagenet"].c.layout().corruption_entry("fog") == "fog"


def test_every_edition_owns_its_card_facts_and_its_p_class_counts():
    from schemas.inputs import CIFAR100_TEST, IMAGENET_VAL

    for edition in EDITIONS.values():
        assert edition.card.title_suffix and set(edition.sources) <= set(edition.card.inputs), edition.name
        assert [edition.p.classes_of(tree) for tree in edition.p.trees] == list(edition.p.num_classes)
    assert EDITIONS["inception"].card.citation.startswith("@inproceedings{szegedy2016rethinking")
    assert EDITIONS["imagenet"].card.citation == "" and EDITIONS["imagenet"].card.input() is IMAGENET_VAL
    assert EDITIONS["cifar"].card.input("cifar100") is CIFAR100_TEST
    assert EDITIONS["cifar"].p.num_classes == (10, 100) and EDITIONS["tinyimagenet"].p.classes_of("Tiny-ImageNet-P") == 200


def test_unknown_families_and_trees_and_an_edition_without_a_card_raise():
    from dataclasses import replace

    with pytest.raises(ValueError, match="unknown source family 'cifar10' for this edition; valid: imagenet"):
        EDITIONS["imagenet"].card.input("cifar10")
    with pytest.raises(ValueError, match="'ImageNet-P' is not an ImageNet-P tree of the cifar edition"):
        EDITIONS["cifar"].p.classes_of("ImageNet-P")
    with pytest.raises(ValueError, match="edition 'nocard' declares no card"):
        replace(EDITIONS["imagenet"], name="nocard", card=None)
    with pytest.raises(ValueError, match="its card names no input for source cifar10"):
        replace(EDITIONS["imagenet"], sources=("imagenet", "cifar10"))


def test_an_input_whose_licence_the_card_or_croissant_cannot_name_is_refused():
    from schemas.inputs import CIFAR_URL, Input

    with pytest.raises(ValueError, match="licence 'unknown' without a license_url"):
        Input("a set", "@misc{a}", "unknown", "terms", "")
    with pytest.raises(ValueError, match="licence 'other' without a license_name"):
        Input("a set", "@misc{a}", "other", "terms", CIFAR_URL)
    assert Input("a set", "@misc{a}", "unknown", "terms", CIFAR_URL).license_name is None


def test_every_layout_declares_its_label_space():
    from schemas.edition import IMAGENET_LABELS, RELEASE_LABELS, Layout, TfdsNames

    spaces = {layout.tree: layout.label_space for e in EDITIONS.values() if e.c for layout in e.c.layouts.values()}
    assert spaces == {"ImageNet-C": IMAGENET_LABELS, "ImageNet-C-299": IMAGENET_LABELS,
                      "ImageNet-64x64-C": IMAGENET_LABELS, "Tiny-ImageNet-C": RELEASE_LABELS,
                      "CIFAR-10-C": RELEASE_LABELS, "CIFAR-100-C": RELEASE_LABELS}
    names = TfdsNames("x", "1.0.0", "test")
    with pytest.raises(ValueError, match="label_space"):
        Layout(tree="X-C", path_template="{corruption}.npy", tfds=names, num_classes=10, label_space="wnids")
    with pytest.raises(ValueError, match="1000 classes"):
        Layout(tree="X-C", path_template="{corruption}.npy", tfds=names, num_classes=10, label_space=IMAGENET_LABELS)
