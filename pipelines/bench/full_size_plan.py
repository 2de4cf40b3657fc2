"""What a full-size run builds: the benchmark, the edition and the configs, as a table.

Kept apart from :mod:`pipelines.bench.full_size` (which runs the steps) so that the command line
can offer the choices without importing the runner.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from schemas.configs import ImageNetCConfig, ImageNetPConfig
from schemas.edition import DEFAULT_EDITION
from schemas.editions import get_edition
from schemas.imagenet_p import PERTURBATIONS

__all__ = ["FULL_SIZE_CORRUPTIONS", "FULL_SIZE_SEVERITY", "FULL_SIZE_PERTURBATIONS", "EVALUATED_CONFIGS",
           "CONFIG_CHOICES", "WHOLE_INPUT_IMAGES", "FullSizePlan"]

FULL_SIZE_CORRUPTIONS = ("gaussian_noise", "defocus_blur", "glass_blur", "zoom_blur", "snow", "frost", "fog",
                         "elastic_transform", "jpeg_compression")
"""The corruptions a full-size run builds besides the clean config: the costliest of the benchmark
(elastic, zoom, glass, defocus, snow) among them."""

FULL_SIZE_SEVERITY = 3
"""The one severity a full-size run of the ten ImageNet-C configs builds."""

FULL_SIZE_PERTURBATIONS = tuple(name for name, p in PERTURBATIONS.items() if p.subset == "test")
"""The ten test perturbations an ImageNet-P full-size run of ten configs builds, at difficulty 1."""

EVALUATED_CONFIGS = 2
"""How many configs ``evaluate`` predicts by default: the plan's first (for ImageNet-C, the clean
config and the first corruption)."""

CONFIG_CHOICES = ("ten", "all")
"""Config choices of a full-size run: ``ten`` (ImageNet-C: the clean config and
:data:`FULL_SIZE_CORRUPTIONS` at :data:`FULL_SIZE_SEVERITY`; ImageNet-P: the ten test perturbations
at difficulty 1) or ``all`` (every config of the edition: 96 for ImageNet-C with its clean config)."""

WHOLE_INPUT_IMAGES = {"imagenet": 50_000, "cifar10": 10_000, "cifar100": 10_000, "tinyimagenet": 10_000}
"""Images of each source family's whole input (ImageNet's validation set, the CIFAR test sets,
Tiny ImageNet's validation set): the size of a whole release."""

_SELECTIONS = {("c", "ten"): (FULL_SIZE_CORRUPTIONS, (FULL_SIZE_SEVERITY,)), ("c", "all"): (None, None),
               ("p", "ten"): (FULL_SIZE_PERTURBATIONS, (1,)), ("p", "all"): (None, None)}
_SELECTION_FLAGS = {"c": ("--corruptions", "--severities"), "p": ("--perturbations", "--difficulties")}


@dataclass(frozen=True)
class FullSizePlan:
    """What a full-size run builds and evaluates.

    Attributes
    ----------
    benchmark : str
        ``'c'`` (``build-c``) or ``'p'`` (``build-p``).
    edition : str
        An edition of :data:`schemas.editions.EDITIONS` (default: the 224 edition).
    configs : str
        One of :data:`CONFIG_CHOICES`.
    evaluated : int
        How many of the configs ``evaluate`` predicts, the first in release order (>= 1).
    formats : tuple of str
        The builds' output formats (``--formats``); empty: the build's default (the tree and the
        TFDS records). ``('tree',)`` halves the disk a whole release takes.
    """

    benchmark: str = "c"
    edition: str = DEFAULT_EDITION
    configs: str = "ten"
    evaluated: int = EVALUATED_CONFIGS
    formats: tuple = ()

    def __post_init__(self):
        if self.benchmark not in _SELECTION_FLAGS:
            raise ValueError(f"benchmark must be 'c' or 'p', got {self.benchmark!r}")
        if self.configs not in CONFIG_CHOICES:
            raise ValueError(f"configs must be one of {', '.join(CONFIG_CHOICES)}, got {self.configs!r}")
        if isinstance(self.evaluated, bool) or not isinstance(self.evaluated, int) or self.evaluated < 1:
            raise ValueError(f"evaluated configs must be an int >= 1, got {self.evaluated!r}")
        self.selection(self.configs)  # an unknown edition, or one without ImageNet-P, fails here
        if self.formats:
            from pipelines.formats.release_formats import check_format_names  # the sinks' names, checked before any step

            object.__setattr__(self, "formats", check_format_names(self.formats))

    def selection(self, configs: str) -> Union[ImageNetCConfig, ImageNetPConfig]:
        """The build's config of the choice ``configs`` (:data:`CONFIG_CHOICES`)."""
        names, levels = _SELECTIONS[self.benchmark, configs]
        kind = ImageNetCConfig if self.benchmark == "c" else ImageNetPConfig
        return kind.select(names, levels, edition=self.edition)

    @property
    def groups(self) -> tuple:
        """The configs built, in release order (``clean``, ``fog_3``, ``gaussian_noise_2``, ...)."""
        return self.selection(self.configs).groups

    @property
    def command(self) -> str:
        """The build's sub-command."""
        return f"build-{self.benchmark}"

    @property
    def family(self) -> str:
        """The source family of the edition's input (its first)."""
        return get_edition(self.edition).sources[0]

    @property
    def whole(self) -> tuple[int, int]:
        """Images and configs of the whole release: the family's whole input and every config."""
        return WHOLE_INPUT_IMAGES[self.family], len(self.selection("all").groups)

    def evaluated_records(self) -> int:
        """What the evaluation's parts commit per image: one prediction per evaluated config (C), one
        per frame of each evaluated set's sequence (P), the count its kill at a fraction waits for."""
        config = self.selection(self.configs)
        if self.benchmark == "c":
            return len(config.groups[:self.evaluated])
        return sum(config.table.perturbations[name].frames for name, _ in config.pairs[:self.evaluated])

    def build_args(self) -> list[str]:
        """The build's arguments that select the edition, the formats and the configs."""
        names, levels = _SELECTIONS[self.benchmark, self.configs]
        args = ["--edition", self.edition, *(["--formats", ",".join(self.formats)] if self.formats else [])]
        if names is not None:
            flags = _SELECTION_FLAGS[self.benchmark]
            args += [flags[0], ",".join(names), flags[1], ",".join(map(str, levels))]
        return args
