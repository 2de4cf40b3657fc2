"""Choosing a subset of a name table (corruptions, perturbations) on the command line."""
from __future__ import annotations

from typing import Iterable, Mapping, Optional

__all__ = ["select_names"]


def select_names(table: Mapping[str, object], names: Optional[Iterable[str]], what: str) -> tuple[str, ...]:
    """The chosen ``names`` in ``table`` order; all of them when ``names`` is None.

    Raises
    ------
    ValueError
        If a name is not in ``table`` (the message lists the valid names) or the selection is empty.
    """
    if names is None:
        return tuple(table)
    wanted = set(names)
    unknown = sorted(wanted - set(table))
    if unknown or not wanted:
        raise ValueError(f"unknown or empty {what} selection {unknown or '[]'}; "
                         f"valid names: {', '.join(table)}")
    return tuple(name for name in table if name in wanted)
