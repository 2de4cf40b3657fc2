"""The ImageNet-C editions: the catalogue, size-bound constants and the frost texture shrink."""
import hashlib

import numpy as np
import pytest

import transforms
from schemas.edition import JPEG, NPY
from schemas.editions import EDITIONS, get_edition
from schemas.imagenet_c import CORRUPTIONS, SEVERITIES
from transforms import assets

SIDES = {"imagenet": 224, "inception": 299, "tinyimagenet": 64, "imagenet64": 64, "cifar": 32}

#: SHA-256 of the shrunk BGR textures (cv2.resize with fx=fy=s), frost1..frost5.
SHRUNK_SHA256 = {
    0.3: ("2afdb560125fb5f1e292bbf966c18644b89de49ae29adbc9c8d5dddd62f1f596",
          "aab5843ffcef67601e426390728ecff2e0b34c74d5ea8c8970a917f560ef29c8",
          "aab5843ffcef67601e426390728ecff2e0b34c74d5ea8c8970a917f560ef29c8",
          "ed79cb12eaadfc262e2a4d7f72d62712273922038004f621ec07f2ddcabca1fd",
          "87e67d4f05833d26dff5793cbca7ff8380678529d76f07382529f53f724aa25a"),
    0.2: ("670e05c6af69bb04e09a593b384c2563f572f7438e70ba68f421d4e4d69c0b28",
          "17b0bcde6421e6b2d1e0b7e5d6637c037efdd66495768b8deb0e03b0d9f8a73a",
          "17b0bcde6421e6b2d1e0b7e5d6637c037efdd66495768b8deb0e03b0d9f8a73a",
          "38ba22a39e3553e9e2a95f01d25258a3dabbd0fb95755a225efe91adad8b436f",
          "441b120cd911cc51bd833708f74772f54b8b7d701dc50ea9f37464dc24307b34"),
}


def test_catalogue_names_sides_and_encodings():
    assert tuple(transforms.EDITIONS) == tuple(SIDES)
    assert {n: e.image_size for n, e in EDITIONS.items()} == SIDES
    assert {n: e.c.encoding for n, e in EDITIONS.items()} == {
        "imagenet": JPEG, "inception": JPEG, "tinyimagenet": JPEG, "imagenet64": JPEG, "cifar": NPY}
    with pytest.raises(ValueError, match="valid editions: imagenet, inception"):
        get_edition("imagenet32")


@pytest.mark.parametrize("name", SIDES)
def test_every_edition_has_the_19_corruptions_with_the_same_keywords(name):
    table = EDITIONS[name].c.corruptions
    assert tuple(table) == tuple(CORRUPTIONS)
    for corruption, spec in table.items():
        assert spec.category == CORRUPTIONS[corruption].category
        assert all(set(spec.params(s)) == set(CORRUPTIONS[corruption].params(1)) for s in SEVERITIES)


def test_size_bound_constants_live_in_the_rows():
    c = {n: e.c.corruptions for n, e in EDITIONS.items()}
    assert [c[n]["fog"].params(1)["mapsize"] for n in SIDES] == [256, 512, 64, 64, 32]
    assert [c[n]["frost"].params(1)["texture_scale"] for n in SIDES] == [None, None, 0.3, 0.3, 0.2]
    assert [len(c["cifar"]["zoom_blur"].params(s)["factors"]) for s in SEVERITIES] == [7, 12, 16, 21, 26]
    assert [len(c["inception"]["zoom_blur"].params(s)["factors"]) for s in SEVERITIES] == [12, 16, 11, 13, 11]
    assert c["inception"]["elastic_transform"].params(1)["sigma"] == 251.99999999999997
    assert c["imagenet64"]["elastic_transform"].params(1) == {"alpha": 0, "sigma": 0, "affine_jitter": 5.12}
    assert c["tinyimagenet"] == c["imagenet64"]  # the same corruption code (the two reference files differ only in their inputs)


@pytest.mark.parametrize("scale", sorted(SHRUNK_SHA256))
def test_frost_textures_shrink_with_fx_scaling(scale):
    got = [hashlib.sha256(np.ascontiguousarray(assets.frost_texture(i, scale)).tobytes()).hexdigest()
           for i in range(5)]
    assert got == list(SHRUNK_SHA256[scale])


@pytest.mark.parametrize("name", SIDES)
def test_corrupt_checks_the_edition_side(name):
    side = SIDES[name]
    x = np.zeros((side, side, 3), np.uint8)
    assert transforms.corrupt(x, "contrast", 1, np.random.RandomState(0), edition=name).shape == x.shape
    wrong = np.zeros((side + 1, side + 1, 3), np.uint8)
    with pytest.raises(ValueError, match=f"shape \\({side}, {side}, 3\\)"):
        transforms.corrupt(wrong, "contrast", 1, np.random.RandomState(0), edition=name)


@pytest.mark.parametrize("name", SIDES)
def test_preprocess_gives_the_edition_side(name):
    photo = np.random.RandomState(1).randint(0, 256, (300, 451, 3)).astype(np.uint8)
    assert transforms.preprocess(photo, edition=name).shape == (SIDES[name],) * 2 + (3,)


@pytest.mark.parametrize("name,side", [("cifar", 32), ("tinyimagenet", 64)])
def test_preprocess_is_the_identity_on_the_datasets_own_images(name, side):
    image = np.random.RandomState(2).randint(0, 256, (side, side, 3)).astype(np.uint8)
    np.testing.assert_array_equal(transforms.preprocess(image, edition=name), image)


GLASS_PAIRS = {"inception": [264627, 85849, 348100, 169362, 167042], "imagenet64": [3844, 3844, 7688, 3600, 7200],
               "cifar": [900, 900, 900, 1800, 1800]}


def _sizes(draws):
    return [int(np.prod(d.kwargs.get("size", d.args[2] if len(d.args) > 2 else 1))) for d in draws]


@pytest.mark.parametrize("name", ["inception", "imagenet64", "cifar"])
def test_random_draws_scale_with_the_edition_side(name):
    from transforms.draws import record_draws

    side = SIDES[name]
    x = np.random.RandomState(3).randint(0, 256, (side, side, 3)).astype(np.uint8)
    assert [_sizes(record_draws(x, "glass_blur", s, 7, edition=name))[0] // 2 for s in SEVERITIES] == GLASS_PAIRS[name]
    mapsize = {"inception": 512, "imagenet64": 64, "cifar": 32}[name]
    fog = record_draws(x, "fog", 2, 7, edition=name)
    assert len(fog) == 3 * int(np.log2(mapsize)) and sum(_sizes(fog)) == mapsize ** 2 - 1
    elastic = record_draws(x, "elastic_transform", 1, 7, edition=name)
    assert [d.method for d in elastic] == ["uniform"] * 3 and _sizes(elastic) == [6, side * side, side * side]
