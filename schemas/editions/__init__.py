"""The catalogue of editions: name -> :class:`schemas.edition.Edition`.

One table module per edition (``imagenet``, ``inception``, ``tinyimagenet``, ``imagenet64``,
``cifar``); adding an edition is adding a module here and a line to :data:`EDITIONS`.
An edition's ImageNet-P facts go into its ``p`` slot (see :class:`schemas.edition.Edition`).
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping, Union

from schemas.edition import DEFAULT_EDITION, Edition

from . import cifar, imagenet, imagenet64, inception, tinyimagenet

EDITIONS: Mapping[str, Edition] = MappingProxyType({
    e.name: e for e in (imagenet.EDITION, inception.EDITION, tinyimagenet.EDITION, imagenet64.EDITION,
                        cifar.EDITION)})


def get_edition(edition: Union[str, Edition, None] = None) -> Edition:
    """The :class:`Edition` named ``edition`` (an Edition passes through; None: the default).

    Raises
    ------
    ValueError
        On an unknown name, listing the valid ones.
    """
    if isinstance(edition, Edition):
        return edition
    name = DEFAULT_EDITION if edition is None else edition
    if name not in EDITIONS:
        raise ValueError(f"unknown edition {name!r}; valid editions: {', '.join(EDITIONS)}")
    return EDITIONS[name]


__all__ = ["EDITIONS", "DEFAULT_EDITION", "Edition", "get_edition"]
