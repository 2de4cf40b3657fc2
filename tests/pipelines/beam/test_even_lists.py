"""Listed images reach the shuffle in lists of one length: a local runner gives each worker an
equal share of the lists, so equal lists are equal work."""
import pytest

from pipelines.beam.evaluate import LISTED_PER_ELEMENT, even_lists


@pytest.mark.parametrize("count", [0, 1, 8, 63, 64, 65, 200, 2200, 50_000])
def test_lists_hold_every_item_once_in_order_and_differ_by_one_at_most(count):
    lists = even_lists(range(count))
    assert [item for chunk in lists for item in chunk] == list(range(count))
    assert all(0 < len(chunk) <= LISTED_PER_ELEMENT for chunk in lists)
    assert len(lists) == -(-count // LISTED_PER_ELEMENT)
    if lists:
        assert max(map(len, lists)) - min(map(len, lists)) <= 1


def test_a_config_of_200_images_is_four_lists_of_50_not_a_tail_of_8():
    assert [len(chunk) for chunk in even_lists(range(200), 64)] == [50, 50, 50, 50]


def test_a_generator_is_listed_whole():
    assert even_lists((i for i in range(5)), 2) == [[0], [1, 2], [3, 4]]
