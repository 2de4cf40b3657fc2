"""The formats of a release, registered: each one :class:`~pipelines.formats.release_sink.ReleaseSink`
subclass (its files, folders, checks, card and help lines), and :data:`FORMATS`, the table the
build, ``verify``, ``--force``, the card and the ``--formats`` help read.

- :class:`TreeFiles` (``tree``): the official folder tree, each output's file at ``record.path``;
  for CIFAR the edition's stacked ``.npy`` arrays (:class:`pipelines.beam.npy_release.StackedArrays`);
- :class:`TfdsRecords` (``tfds``): the TFRecord shards and metadata files
  ``tfds.builder_from_directory`` loads;
- :class:`WebDatasetShards` (``webdataset``): tar shards of the images and labels;
- :class:`HfIndex` and :class:`CroissantFile`: what ``imagenet-cp publish`` writes for the Hugging
  Face Hub and MLCommons Croissant (published, not ``--formats`` choices).

Adding a format is one class and one entry in :data:`FORMATS` (``docs/dev/adding-a-format.md``):
the writer, ``verify``, the output folder and the card are not edited.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from schemas.publication import CROISSANT, HF_DIR, HF_INDEX
from schemas.release import DEFAULT_FORMATS, P_BENCHMARK, TFDS_DIR, TFDS_FORMAT, TREE_FORMAT, WEBDATASET_DIR, Release

from pipelines.formats.release_sink import BuildKind, CardContext, GroupOutputs, ReleaseFiles, ReleaseSink

if TYPE_CHECKING:
    from schemas.records import FileInfo, OutputRecord, SourceEntry

    from pipelines.formats.checksum_table import ChecksumTable

__all__ = ["TreeFiles", "TfdsRecords", "WebDatasetShards", "HfIndex", "CroissantFile", "FORMATS", "release_formats",
           "check_format_names", "examples_read", "release_sinks", "check_build_formats", "format_folders",
           "format_problems", "loading_lines", "formats_help"]


class TreeFiles(ReleaseSink):
    """``--formats tree``: each output's file at ``record.path``, and every class folder of each folder
    of classes. Per output, on the worker (:meth:`write_output`); per config, the class folders a
    subset leaves empty (:meth:`write_group`). A stacked row (``record.stacked``) has no file of its
    own: the edition's sink stacks it (:class:`pipelines.beam.npy_release.StackedArrays`), which the
    tree brings into the build (:meth:`edition_sinks`). Its folders are the editions' trees
    (:func:`schemas.editions.release_trees`), which ``--force`` removes as the release layout."""

    name = TREE_FORMAT
    help = "the official folder tree, or the .npy arrays of CIFAR"
    shares_config_part = True

    def edition_sinks(self, sinks: Sequence[ReleaseSink]) -> tuple:
        return tuple(sinks)  # the stacked .npy arrays are the tree of CIFAR

    def write_output(self, release: ReleaseFiles, record: "OutputRecord") -> Optional["FileInfo"]:
        """Write ``record``'s file (a folder of classes gets all its class folders before its first
        file, :func:`pipelines.formats.class_folders.make_class_folders_once`); None for a stacked row."""
        if record.stacked:
            return None
        from pipelines.formats import storage
        from pipelines.formats.class_folders import make_class_folders_once

        make_class_folders_once(release.output_dir, record.path.rpartition("/")[0], release.class_names)
        return storage.write_new(release.output_dir, record.path, record.data, group=record.group)

    def write_group(self, release: ReleaseFiles, group: str, outputs: GroupOutputs) -> list["FileInfo"]:
        from pipelines.formats.class_folders import make_class_folders

        make_class_folders(release.output_dir, outputs.folders, release.class_names)  # empty ones a subset misses
        return []

    def card_lines(self, card: CardContext) -> list[str]:
        release = card.release
        if self.name not in release.formats:
            return [f"This release holds no folder tree (built with `--formats {','.join(release.formats)}`).", ""]
        if release.encoding == "npy":
            return [f"`{release.tree}/<corruption>.npy` keeps the official layout: `np.load` gives uint8 (N, H, W, 3) "
                    f"rows, severity after severity, with `{release.labels or 'labels.npy'}`.", ""]
        if release.tree:
            return [f"The folder tree `{release.tree}/` keeps the official layout (`imagenet-cp evaluate --release "
                    "RELEASE_DIR` runs a model over it).", ""]
        return []


class TfdsRecords(ReleaseSink):
    """``--formats tfds``: per config, the TFRecord shards of the spilled examples (in key order; a
    shard that received none is written empty), ``dataset_info.json``, ``features.json`` and the label
    files (:func:`pipelines.formats.tfrecord.write_config_shards`), under ``tfds/``."""

    name = TFDS_FORMAT
    folders = (TFDS_DIR,)
    help = "TFRecord shards that tfds.builder_from_directory loads"
    shares_config_part = True
    reads_examples = True

    def write_group(self, release: ReleaseFiles, group: str, outputs: GroupOutputs) -> list["FileInfo"]:
        from pipelines.formats.tfrecord import write_config_shards

        return write_config_shards(release, group, outputs.shard_refs)

    def card_lines(self, card: CardContext) -> list[str]:
        tfds = card.release.tfds
        if not tfds or self.name not in card.release.formats:
            return []
        return ["With TensorFlow Datasets:", "", "```python", "import tensorflow_datasets as tfds",
                f'builder = tfds.builder_from_directory("RELEASE_DIR/{tfds.data_dir}/{tfds.name}/{card.first}/'
                f'{tfds.version}")',
                f'ds = builder.as_dataset(split="{tfds.split}")', "```", ""]


class WebDatasetShards(ReleaseSink):
    """``--formats webdataset``: each config's WebDataset shards ``webdataset/<config>/<config>-NNNNNN.tar``,
    made from its manifest and the images of its spilled TFDS examples (the tree's files for videos;
    :func:`pipelines.formats.webdataset.write_spilled_webdataset`), whichever other formats the
    release holds; verify reads every shard back (:func:`pipelines.formats.webdataset.check_release_shards`)."""

    name = WEBDATASET_DIR
    folders = (WEBDATASET_DIR,)
    help = "webdataset/<config>/<config>-000000.tar shards of the images and labels, at most 1 GB each"
    reads_examples = True

    def write_group(self, release: ReleaseFiles, group: str, outputs: GroupOutputs) -> list["FileInfo"]:
        from pipelines.formats.webdataset import write_spilled_webdataset

        return write_spilled_webdataset(release, group, outputs.shard_refs)

    def check_build(self, formats: Sequence[str], build: BuildKind) -> None:
        """ImageNet-P only: refuse the shards of stacked ``.npy`` sequences (CIFAR-10-P: a sequence has
        no one file, and those arrays are what its evaluator loads), and the shards without the tree
        (their samples are the tree's MP4 files)."""
        if build.benchmark != P_BENCHMARK:
            return
        if build.stacked:
            raise ValueError(f"--formats {self.name}: the {build.edition} edition's ImageNet-P writes stacked .npy "
                             "sequences, not a tree of video files; its shards are not written (load the .npy arrays "
                             "or the TFDS records)")
        if TREE_FORMAT not in formats:
            raise ValueError(f"--formats {self.name} of ImageNet-P needs {TREE_FORMAT} too: its samples are the "
                             "tree's MP4 files")

    def check(self, root: str, release: Release, listed: "ChecksumTable") -> list[str]:
        from pipelines.formats.webdataset import check_release_shards

        return check_release_shards(root, list(release.manifest_parts), listed, release.formats)

    def card_lines(self, card: CardContext) -> list[str]:
        if self.name not in card.release.formats:
            return []
        return ["With `webdataset` (PyTorch), one config's shards:", "", "```python", "import glob",
                "import webdataset",
                f'shards = sorted(glob.glob("RELEASE_DIR/{WEBDATASET_DIR}/{card.first}/*.tar"))',
                'ds = webdataset.WebDataset(shards, shardshuffle=False).decode("pil")', "```", ""]


class HfIndex(ReleaseSink):
    """The Hugging Face index ``imagenet-cp publish`` writes (:mod:`pipelines.release.hf_index`):
    ``metadata.parquet`` over a tree of images, ``hf/<config>.parquet`` for stacked arrays; verify
    reads it as ``datasets`` does (:func:`pipelines.release.hf_index.check_index`)."""

    name = HF_DIR
    folders = (HF_INDEX, HF_DIR)
    published = True

    def check(self, root: str, release: Release, listed: "ChecksumTable") -> list[str]:
        from pipelines.release.hf_index import check_index

        return check_index(root, release, listed)

    def card_lines(self, card: CardContext) -> list[str]:
        if not card.hf_configs:
            return []
        tfds = card.release.tfds
        split = tfds.split if tfds and tfds.split is not None else "test"
        return ["With Hugging Face `datasets` (from this folder, or from the Hub once uploaded):", "", "```python",
                "import datasets", f'ds = datasets.load_dataset("RELEASE_DIR", "{card.first}", split="{split}")',
                "ds[0][\"image\"], ds.features[\"label\"].int2str(ds[0][\"label\"])", "```", ""]


class CroissantFile(ReleaseSink):
    """``croissant.json``, the MLCommons Croissant description ``imagenet-cp publish`` writes
    (:mod:`pipelines.release.croissant`; verify makes it again and compares the bytes,
    :func:`pipelines.release.verify_publication.check_publication`)."""

    name = "croissant"
    folders = (CROISSANT,)
    published = True

    def card_lines(self, card: CardContext) -> list[str]:
        return ["With MLCommons Croissant (`croissant.json`, one record set per config):", "", "```python",
                "import mlcroissant", 'records = mlcroissant.Dataset("RELEASE_DIR/croissant.json").records('
                f'"{card.first}")', "```", ""]


FORMATS: dict[str, type] = {sink.name: sink for sink in (HfIndex, TfdsRecords, CroissantFile, WebDatasetShards,
                                                          TreeFiles)}
"""Name -> the class of every format a release may hold (made with no arguments), in the order the
card shows them; those not :attr:`~pipelines.formats.release_sink.ReleaseSink.published` are the
``--formats`` choices."""


def release_formats() -> tuple:
    """One instance of every registered format, in :data:`FORMATS` order."""
    return tuple(sink() for sink in FORMATS.values())


def _choices() -> list[str]:
    return sorted(name for name, sink in FORMATS.items() if not sink.published)


def check_format_names(formats: Iterable[str]) -> tuple:
    """``formats`` in name order, once each; refuse none, and a name that is not a ``--formats`` choice.

    Raises
    ------
    ValueError
        For no format, or a format no sink writes.
    """
    formats, valid = tuple(sorted(set(formats))), _choices()
    unknown = [name for name in formats if name not in valid]
    if unknown:
        raise ValueError(f"unknown output format {unknown[0]!r}; valid: {', '.join(valid)}")
    if not formats:
        raise ValueError(f"no output format chosen: name one or more of {', '.join(valid)}")
    return formats


def release_sinks(formats: Iterable[str], edition_sinks: Sequence[ReleaseSink],
                  entries: Sequence["SourceEntry"]) -> tuple:
    """The sinks of a build: one per format named (in name order), then the edition's sinks those
    formats bring (:meth:`~pipelines.formats.release_sink.ReleaseSink.edition_sinks`: all of them with
    the tree); each for the listed input ``entries`` (:meth:`~pipelines.formats.release_sink.ReleaseSink.for_input`).

    Raises
    ------
    ValueError
        For no format, or a format no sink writes.
    """
    sinks = [FORMATS[name]() for name in check_format_names(formats)]
    sinks += [edition for sink in list(sinks) for edition in sink.edition_sinks(edition_sinks)]
    return tuple(sink.for_input(entries) for sink in sinks)


def examples_read(formats: Iterable[str]) -> bool:
    """Whether a sink of ``formats`` reads the outputs' TFDS examples back
    (:attr:`~pipelines.formats.release_sink.ReleaseSink.reads_examples`): a build of formats that do
    not makes none (an ImageNet-P sequence's PNG frames) and keeps none in its parts.

    >>> examples_read(["tree"]), examples_read(["tfds", "tree"])
    (False, True)
    """
    return any(FORMATS[name].reads_examples for name in check_format_names(formats))


def check_build_formats(formats: Iterable[str], build: BuildKind) -> tuple:
    """``formats`` checked (:func:`check_format_names`), then refused where a format named cannot be
    in the release ``build`` makes (:meth:`~pipelines.formats.release_sink.ReleaseSink.check_build`).

    Raises
    ------
    ValueError
        Naming the format and why.
    """
    formats = check_format_names(formats)
    for name in formats:
        FORMATS[name]().check_build(formats, build)
    return formats


def format_folders() -> tuple:
    """The top-level names of a release every registered format owns, once each."""
    return tuple(dict.fromkeys(name for sink in release_formats() for name in sink.folders))


def format_problems(root: str, release: Release, listed: "ChecksumTable") -> list[str]:
    """The problems every registered format finds in the release at ``root``
    (:meth:`~pipelines.formats.release_sink.ReleaseSink.check`)."""
    return [problem for sink in release_formats() for problem in sink.check(root, release, listed)]


def loading_lines(card: CardContext) -> list[str]:
    """The card's lines on loading each format (:meth:`~pipelines.formats.release_sink.ReleaseSink.card_lines`)."""
    return [line for sink in release_formats() for line in sink.card_lines(card)]


def formats_help() -> str:
    """The ``--formats`` help: each choice with its :attr:`~pipelines.formats.release_sink.ReleaseSink.help`."""
    choices = ", ".join(f"{name} ({FORMATS[name].help})" for name in _choices())
    return (f"comma-separated output formats: {choices}; each as much disk as the tree "
            f"(default: {','.join(DEFAULT_FORMATS)})")
