"""ImageNet-A / ImageNet-O construction by adversarial filtration: parameters, decision codes,
file layout of a filter run and of a packaged set, declared as data.

A filter run (``filter-a`` / ``filter-o``) writes, under ``OUT``::

    OUT/decisions.jsonl      one row per candidate: decision kept / rejected / capped, reason, scores
    OUT/failures.jsonl       candidate files that could not be used, with the reason
    OUT/logits/<wnid>.npy    float32 (n, models, 10, 1000) logits, rows in the order of <wnid>.keys.txt
    OUT/review/index.html    the review sheet of the shortlist (items with decision ``kept``)
    OUT/filter.json          config, models, funnel counts per class, library versions

A packaged set (``package-a`` / ``package-o``) is a release directory::

    PKG/imagenet-a/<wnid>/<file>, PKG/imagenet-a/README.txt   the official layout
    PKG/manifest/imagenet-a.jsonl, PKG/sources.jsonl, PKG/release.json, PKG/SHA256SUMS
    PKG/packages/imagenet-a.tar + SHA256SUMS
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

__all__ = ["A_TREE", "O_TREE", "DECISIONS", "FILTER_JSON", "LOGITS_DIR", "REVIEW_DIR", "REVIEW_PAGE", "KEPT",
           "REJECTED", "CAPPED", "DECISION_CODES", "REVIEW_CODES", "CLASS_SETS", "NEAR_DUPLICATE_BITS", "BIBTEX",
           "Task", "TASKS", "FilterConfig", "DecisionRecord"]

A_TREE = "imagenet-a"
O_TREE = "imagenet-o"

DECISIONS = "decisions.jsonl"
FILTER_JSON = "filter.json"
LOGITS_DIR = "logits"
REVIEW_DIR = "review"
REVIEW_PAGE = "review/index.html"

KEPT, REJECTED, CAPPED = "kept", "rejected", "capped"
DECISION_CODES = (KEPT, REJECTED, CAPPED)

#: Reviewer decision codes (algorithms.md, "Review and packaging"); ``depicts_in1k_class`` is for ImageNet-O only.
REVIEW_CODES = ("accept", "reject:wrong_label", "reject:multi_object", "reject:low_quality",
                "reject:offensive_or_pii", "reject:duplicate", "reject:depicts_in1k_class")

CLASS_SETS = ("imagenet_a", "imagenet_o", "all")
"""Named class sets the filter's softmax and argmax run over; a file of wnids is also accepted."""

NEAR_DUPLICATE_BITS = 6
"""Largest Hamming distance between two 64-bit difference hashes counted as a near-duplicate."""

BIBTEX = """@article{hendrycks2019nae,
  title={Natural Adversarial Examples},
  author={Dan Hendrycks and Kevin Zhao and Steven Basart and Jacob Steinhardt and Dawn Song},
  journal={arXiv preprint arXiv:1907.07174},
  year={2019}
}"""


@dataclass(frozen=True)
class Task:
    """What differs between the ImageNet-A and ImageNet-O constructions.

    Attributes
    ----------
    name : str
        ``'imagenet_a'`` or ``'imagenet_o'``.
    tree : str
        Root folder of the packaged set.
    default_classes : str
        Class set of the filter's softmax (a :data:`CLASS_SETS` name).
    weak_labels : bool
        True when the candidate folder is the candidate's class (A); for O it is the source
        synset, which must not be an ImageNet-1k class.
    dataset_title : str
        Name in the README's first line.
    """

    name: str
    tree: str
    default_classes: str
    weak_labels: bool
    dataset_title: str


TASKS: Mapping[str, Task] = MappingProxyType({
    "imagenet_a": Task("imagenet_a", A_TREE, "imagenet_a", True, "ImageNet-A"),
    "imagenet_o": Task("imagenet_o", O_TREE, "imagenet_o", False, "ImageNet-O"),
})


@dataclass(frozen=True)
class FilterConfig:
    """Parameters of one filter run (recorded in ``filter.json``).

    Attributes
    ----------
    task : str
        A key of :data:`TASKS`.
    classes : str
        Class set name (:data:`CLASS_SETS`) or ``'file:<sha256>'`` of a given list.
    class_wnids : tuple of str
        The wnids of the set, sorted (ImageNet-1k index order).
    threshold : float
        R2: a candidate is rejected when the weak label's probability exceeds it (strictly).
    cap : int
        Most candidates kept per confusion (A: (true, predicted); O: per predicted class, the k).
    primary_model : int
        Index of the model whose centre-crop prediction forms the confusion key.
    msp_cut : float
        O only: the smallest score (min over crops of the max softmax probability) kept.
    min_size : int, optional
        R0: smallest short side in pixels (after EXIF orientation); None accepts any decodable image.
    """

    task: str
    classes: str
    class_wnids: tuple = field(repr=False)
    threshold: float = 0.15
    cap: int = 15
    primary_model: int = 0
    msp_cut: float = 0.0
    min_size: Optional[int] = None

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; valid: {', '.join(TASKS)}")
        if not 0 <= self.threshold <= 1:
            raise ValueError(f"threshold must lie in [0, 1], got {self.threshold}")
        if self.cap < 1:
            raise ValueError(f"cap must be >= 1, got {self.cap}")
        if not 0 <= self.msp_cut <= 1:
            raise ValueError(f"msp_cut must lie in [0, 1], got {self.msp_cut}")
        if self.min_size is not None and self.min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {self.min_size}")
        if len(self.class_wnids) < 2 or list(self.class_wnids) != sorted(set(self.class_wnids)):
            raise ValueError("the class set must hold at least 2 distinct wnids, sorted")

    def to_json(self) -> dict:
        document = asdict(self)
        document["class_wnids"] = list(self.class_wnids)
        return {**document, "rules": {
            "R0": "unusable: cannot be read or decoded" + (f", or short side < {self.min_size}" if self.min_size else ""),
            "R1": "some crop of some model has the weak label as argmax over the class set",
            "R2": f"the weak label's softmax probability over the class set exceeds {self.threshold} "
                  "on some crop of some model (per crop, max over crops and models)",
            "cap": "at most `cap` per (weak label, primary model's centre-crop prediction), in ascending "
                   "order of the R2 statistic, ties by the SHA-256 of the original bytes" if TASKS[self.task].weak_labels
                   else "at most `cap` per primary model's centre-crop prediction, in descending order of "
                        "the score (min over crops and models of the max softmax probability), ties by SHA-256",
        }}


@dataclass(frozen=True)
class DecisionRecord:
    """One line of a filter run's ``decisions.jsonl``: a candidate and what the filter decided.

    Attributes
    ----------
    key : str
        The candidate's key, ``<source synset>/<file>``.
    decision : str
        One of :data:`DECISION_CODES`.
    wnid : str
        Its weak label (A) or source synset (O).
    source : str
        Its file relative to the candidate folder.
    sha256 : str
        SHA-256 of its bytes when it was filtered.
    reason : str
        Why (the rule that rejected it, or why it survived).
    confusion : sequence of str, optional
        Its confusion (A: weak label, predicted class; O: predicted class); None when rejected early.
    rank : int, optional
        Its rank within its confusion.
    fields : Mapping
        The rest as the filter recorded it (``models``, ``rules``, ``metadata``, ``bytes``, ``score``, ...).
    """

    key: str
    decision: str
    wnid: str
    source: str
    sha256: str
    reason: str
    confusion: Optional[tuple] = None
    rank: Optional[int] = None
    fields: Mapping = field(default_factory=dict)

    COMMON = ("key", "decision", "wnid", "source", "sha256", "reason", "confusion", "rank")
    """The JSON names of the declared fields (the rest are :attr:`fields`)."""

    @classmethod
    def from_json(cls, row: Mapping) -> "DecisionRecord":
        """The record of a parsed ``decisions.jsonl`` line.

        Raises
        ------
        KeyError
            When the line lacks one of ``key``, ``decision``, ``wnid``, ``source``, ``sha256``, ``reason``.
        """
        confusion = row.get("confusion")
        return cls(key=row["key"], decision=row["decision"], wnid=row["wnid"], source=row["source"],
                   sha256=row["sha256"], reason=row["reason"], confusion=None if confusion is None else tuple(confusion),
                   rank=row.get("rank"), fields={k: v for k, v in row.items() if k not in cls.COMMON})

    def to_json(self) -> dict:
        """The line's JSON object."""
        return {**self.fields, "key": self.key, "decision": self.decision, "wnid": self.wnid, "source": self.source,
                "sha256": self.sha256, "reason": self.reason,
                "confusion": None if self.confusion is None else list(self.confusion), "rank": self.rank}
