"""What the evaluation's listing hands to the shuffle that spreads the work ("Spread"): a local
runner's driver holds everything shuffled, so only a reference per list crosses it, of one size
whatever the items and their number per list; the items are in the scratch folder's ``.lists/``."""
import pytest
from apache_beam.coders import registry

import pipelines.beam.evaluate as evaluate
from pipelines.formats.spill import SpillRef
from pipelines.beam.evaluate import LISTED_PER_ELEMENT, even_lists, read_listed, write_listed


def items(count, size=40):
    return [(("fog_1", f"n01440764/{index:08d}.JPEG", index % 1000), "/release/" + "x" * size) for index in range(count)]


@pytest.mark.parametrize("count", [0, 1, 64, 65, 200, 2200])
def test_the_lists_read_back_are_even_lists_of_the_items(tmp_path, count):
    refs = write_listed(str(tmp_path), "C/fog_1", iter(items(count)))
    assert all(isinstance(ref, SpillRef) for ref in refs)
    assert [read_listed(ref) for ref in refs] == even_lists(items(count))


def test_a_reference_is_as_small_whatever_the_items(tmp_path):
    coder = registry.get_coder(object)
    small = write_listed(str(tmp_path / "small"), "C/fog_1", items(2 * LISTED_PER_ELEMENT, size=10))
    large = write_listed(str(tmp_path / "large"), "C/fog_1", items(2 * LISTED_PER_ELEMENT, size=10_000))
    assert len(small) == len(large) == 2
    assert max(len(coder.encode(ref)) for ref in small + large) < 200  # not 64 items of 10 KB


def test_the_listing_step_emits_references_not_items(tmp_path, monkeypatch):
    videos = [(("rotate", f"n01440764/{index}.mp4", 0), f"/release/{index}.mp4") for index in range(300)]
    monkeypatch.setattr(evaluate, "_list_sequences", lambda p_set, release_dir: videos)
    listing = evaluate._ListPendingFn("p", str(tmp_path), None, "/release")
    listing.setup()
    *emitted, counted = listing.process((("rotate", "/release/ImageNet-P/rotate"), []))
    assert (counted.tag, counted.value) == ("listed", ("P/rotate", 300))  # what the prediction file must hold
    assert all(isinstance(ref, SpillRef) for ref in emitted)
    assert len(emitted) == -(-300 // LISTED_PER_ELEMENT)
    assert [video for ref in emitted for video in read_listed(ref)] == videos
