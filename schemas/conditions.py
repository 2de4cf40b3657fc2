"""The fan-out of an ImageNet-C build as data: one row per output config of every source image.

A row is a :class:`Condition`: a corruption at a severity, or the clean image (no corruption).
Everything a build derives from a row (its TFDS config, its folder in the tree, its manifest
part, its manifest fields) comes from the row, so the clean config is one more row of the table,
not a special case of the writers. An edition that carries a clean config lists
:data:`CLEAN_CONDITION` among its rows (:func:`fan_out` with ``clean=True``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from schemas.release import CLEAN
from schemas.tfds import imagenet_c_config

__all__ = ["Condition", "CLEAN_CONDITION", "fan_out"]


@dataclass(frozen=True)
class Condition:
    """One output config of an ImageNet-C build.

    Attributes
    ----------
    corruption : str or None
        Corruption name; None for the clean images (the preprocessed crop, encoded as the outputs).
    severity : int or None
        Severity 1..5; None for the clean images.
    """

    corruption: Optional[str] = None
    severity: Optional[int] = None

    @property
    def is_clean(self) -> bool:
        """True for the clean row (no corruption, no random stream)."""
        return self.corruption is None

    @property
    def config(self) -> str:
        """TFDS config and manifest part name: ``'<corruption>_<severity>'`` or ``'clean'``."""
        return CLEAN if self.is_clean else imagenet_c_config(self.corruption, self.severity)

    @property
    def folder(self) -> str:
        """Folder in the edition's tree: ``'<corruption>/<severity>'`` or ``'clean'``."""
        return CLEAN if self.is_clean else f"{self.corruption}/{self.severity}"

    def manifest_fields(self) -> dict:
        """The condition's manifest fields (None for the clean row)."""
        return {"corruption": self.corruption, "severity": self.severity}


CLEAN_CONDITION = Condition()
"""The clean row: each source image as every corruption receives it."""


def fan_out(corruptions: Sequence[str], severities: Sequence[int], clean: bool = True) -> tuple:
    """The rows of a build, in release order: the clean row first (when ``clean``), then every
    corruption at every severity, in the order given."""
    rows = tuple(Condition(c, s) for c in corruptions for s in severities)
    return ((CLEAN_CONDITION,) if clean else ()) + rows
