"""release.json names an edition (catalogue name) and a benchmark; old releases map to the same pair."""
import pytest

from schemas.editions import EDITIONS, release_identity
from schemas.release import BENCHMARKS


@pytest.mark.parametrize("document, expected", [
    ({"edition": "imagenet", "benchmark": "c", "tree": "imagenet-c"}, ("imagenet", "c")),
    ({"edition": "cifar", "benchmark": "p", "tree": "CIFAR-10-P"}, ("cifar", "p")),
    # releases made before the benchmark field
    ({"edition": "imagenet-c", "tree": "imagenet-c"}, ("imagenet", "c")),
    ({"edition": "imagenet-p", "tree": "imagenet-p"}, ("imagenet", "p")),
    ({"edition": "vcr", "tree": "vcr"}, ("imagenet", "vcr")),
    ({"edition": "imagenet-a", "tree": "imagenet-a"}, ("imagenet", "a")),
    ({"edition": "imagenet-o", "tree": "imagenet-o"}, ("imagenet", "o")),
    ({"edition": "cifar", "tree": "CIFAR-10-C"}, ("cifar", "c")),
    ({"edition": "cifar", "tree": "CIFAR-100-P"}, ("cifar", "p")),
    ({"edition": "tinyimagenet", "tree": "Tiny-ImageNet-P"}, ("tinyimagenet", "p")),
    ({"edition": "inception", "tree": "imagenet-c-299"}, ("inception", "c")),
])
def test_release_identity_of_new_and_old_releases(document, expected):
    identity = release_identity(document)
    assert identity == expected and identity.edition in EDITIONS and identity.benchmark in BENCHMARKS


@pytest.mark.parametrize("document", [{}, {"edition": "imagenet32", "tree": "x"}, {"edition": "cifar"}])
def test_release_identity_refuses_a_document_naming_no_known_release(document):
    with pytest.raises(ValueError, match="names no known edition"):
        release_identity(document)
