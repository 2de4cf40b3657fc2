"""TFDS declarations: feature connectors, datasets and the metadata files TFDS reads.

The JSON built here is what ``tensorflow_datasets`` 4.9 writes itself
(``tfds.folder_dataset.write_metadata`` / ``DatasetInfo.write_to_directory``): ``features.json``
(the feature connectors), ``dataset_info.json`` (name, config, version, splits with shard lengths)
and one ``<feature>.labels.txt`` per class label. No TensorFlow is needed to write them.

A dataset config lives in ``tfds/<name>/<config>/<version>/``, its shards are named
``<name>-<split>.tfrecord-<XXXXX>-of-<YYYYY>``, so both ``tfds.builder_from_directory`` and, when
name and version match a registered builder, ``tfds.load(name/config, data_dir=DIR/tfds)`` read it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional, Sequence, Union

from schemas.imagenet_c import CORRUPTIONS, IMAGE_SIZE, SEVERITIES
from schemas.release import CLEAN, TFDS_DIR
from schemas.wnids import imagenet_wnids

__all__ = ["BYTES_LIST", "INT64_LIST", "FLOAT_LIST", "SHARD_TEMPLATE", "Image", "ClassLabel", "Text", "Scalar",
           "TfdsDataset", "split_examples", "feature_names", "imagenet_c_config", "BENCHMARK_CITATION", "BENCHMARK_HOMEPAGE", "IMAGENET2012_CORRUPTED"]

_FEATURES = "tensorflow_datasets.core.features."
BYTES_LIST, INT64_LIST, FLOAT_LIST = "bytes", "int64", "float"
"""The list kinds of a ``tf.train.Feature``; each feature connector declares the one it is stored as
(its ``stored_as``), and :meth:`stored` gives the list of values of one example's value."""

SHARD_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
"""TFDS's default shard file name template (``naming.DEFAULT_FILENAME_TEMPLATE``)."""


@dataclass(frozen=True)
class Image:
    """``tfds.features.Image``: one encoded image, stored as a single bytes value."""

    shape: tuple
    encoding_format: str = "jpeg"
    stored_as = BYTES_LIST

    def stored(self, value: bytes) -> list:
        """The encoded image, as the one value of a BytesList."""
        return [value]

    def config(self) -> dict:
        return {"pythonClassName": _FEATURES + "image_feature.Image",
                "image": {"dtype": "uint8", "encodingFormat": self.encoding_format,
                          "shape": {"dimensions": [str(-1 if d is None else d) for d in self.shape]}}}

    def metadata_files(self, name: str) -> dict[str, str]:
        return {}


@dataclass(frozen=True)
class ClassLabel:
    """``tfds.features.ClassLabel``: an int64 index into ``names`` (or ``num_classes`` without
    names, as TFDS's ``cifar10_corrupted`` declares it: then no labels file is written)."""

    names: tuple = ()
    num_classes: Optional[int] = None
    stored_as = INT64_LIST

    def stored(self, value: int) -> list:
        """The label index, as the one value of an Int64List."""
        return [value]

    def config(self) -> dict:
        count = self.num_classes if self.num_classes is not None else len(self.names)
        return {"pythonClassName": _FEATURES + "class_label_feature.ClassLabel",
                "classLabel": {"numClasses": str(count)}}

    def metadata_files(self, name: str) -> dict[str, str]:
        """``<name>.labels.txt``: one class name a line, as ``ClassLabel.save_metadata`` writes."""
        if not self.names:
            return {}
        return {f"{name}.labels.txt": "".join(n + "\n" for n in self.names)}


@dataclass(frozen=True)
class Text:
    """``tfds.features.Text``: a UTF-8 string, stored as a single bytes value."""

    stored_as = BYTES_LIST

    def stored(self, value: str) -> list:
        """The string's UTF-8 bytes, as the one value of a BytesList."""
        return [value.encode("utf-8")]

    def config(self) -> dict:
        return {"pythonClassName": _FEATURES + "text_feature.Text", "text": {}}

    def metadata_files(self, name: str) -> dict[str, str]:
        return {}


@dataclass(frozen=True)
class Scalar:
    """``tfds.features.Scalar``: one number of ``dtype`` (float32 values travel as a FloatList)."""

    dtype: str = "float32"

    @property
    def stored_as(self) -> str:
        return FLOAT_LIST if self.dtype.startswith("float") else INT64_LIST

    def stored(self, value) -> list:
        """The number, as the one value of a FloatList (float dtypes) or an Int64List."""
        return [float(value) if self.stored_as == FLOAT_LIST else value]

    def config(self) -> dict:
        return {"pythonClassName": _FEATURES + "scalar.Scalar",
                "tensor": {"shape": {}, "dtype": self.dtype, "encoding": "none"}}

    def metadata_files(self, name: str) -> dict[str, str]:
        return {}


@dataclass(frozen=True)
class TfdsDataset:
    """A TFDS dataset whose configs a release writes, one config per output group.

    Attributes
    ----------
    name : str
        Dataset name, e.g. ``'imagenet2012_corrupted'``.
    version : str
        ``'X.Y.Z'``; the directory name of every config.
    features : Mapping[str, feature]
        Feature connectors by name, in declaration order.
    config_descriptions : Mapping[str, str]
        Config name -> description; the configs a release may contain.
    split : str
        The one split written.
    description, citation, homepage : str
        Documentation fields of ``dataset_info.json``.
    supervised_keys : tuple of str, optional
        ``(input, target)`` feature names.
    release_notes : Mapping[str, str]
        Version -> note.
    """

    name: str
    version: str
    features: Mapping
    config_descriptions: Mapping[str, str]
    split: str = "validation"
    description: str = ""
    citation: str = ""
    homepage: str = ""
    supervised_keys: Optional[tuple] = None
    release_notes: Mapping[str, str] = field(default_factory=dict)

    def config_dir(self, config: str) -> str:
        """Relative path of a config's folder, e.g. ``tfds/imagenet2012_corrupted/fog_3/3.1.0``."""
        self.check_config(config)
        return f"{TFDS_DIR}/{self.name}/{config}/{self.version}"

    def check_config(self, config: str) -> None:
        """Raise ``ValueError`` unless ``config`` is one of :attr:`config_descriptions`."""
        if config not in self.config_descriptions:
            raise ValueError(f"unknown {self.name} config {config!r}; valid configs: "
                             f"{', '.join(self.config_descriptions)}")

    def shard_name(self, index: int, count: int) -> str:
        """File name of shard ``index`` (0-based) of ``count``: TFDS's default template."""
        if not 0 <= index < count:
            raise ValueError(f"shard index must be in [0, {count}), got {index}")
        return f"{self.name}-{self.split}.tfrecord-{index:05d}-of-{count:05d}"

    def features_json(self) -> str:
        """``features.json``: the ``FeaturesDict`` config, as TFDS writes it."""
        document = {"pythonClassName": _FEATURES + "features_dict.FeaturesDict",
                    "featuresDict": {"features": {n: f.config() for n, f in self.features.items()}}}
        return json.dumps(document, indent=4, sort_keys=True)

    def metadata_files(self) -> dict[str, str]:
        """Per-feature metadata files (e.g. ``label.labels.txt``) by file name."""
        files = {}
        for name, feature in self.features.items():
            files.update(feature.metadata_files(name))
        return files

    def dataset_info_json(self, config: str, shard_lengths: Sequence[int], num_bytes: int) -> str:
        """``dataset_info.json`` of one config.

        Parameters
        ----------
        config : str
            Config name.
        shard_lengths : sequence of int
            Examples in each shard, in shard order.
        num_bytes : int
            Sum of the serialized example sizes (TFRecord framing excluded), as TFDS counts.
        """
        self.check_config(config)
        document = {
            "name": self.name,
            "version": self.version,
            "configName": config,
            "configDescription": self.config_descriptions[config],
            "description": self.description,
            "citation": self.citation,
            "fileFormat": "tfrecord",
            "splits": [{"name": self.split, "filepathTemplate": SHARD_TEMPLATE,
                        "numBytes": str(num_bytes), "shardLengths": [str(n) for n in shard_lengths]}],
        }
        if self.homepage:
            document["location"] = {"urls": [self.homepage]}
        if self.release_notes:
            document["releaseNotes"] = dict(self.release_notes)
        if self.supervised_keys:
            document["supervisedKeys"] = {"tuple": {"items": [{"featureKey": k} for k in self.supervised_keys]}}
        return json.dumps(document, indent=2, sort_keys=True)


def split_examples(dataset_info: Union[str, bytes], split: Optional[str] = None) -> list[int]:
    """The examples of each split a ``dataset_info.json`` (:meth:`TfdsDataset.dataset_info_json`)
    lists (the sum of its ``shardLengths``): those named ``split``, or every split (None).

    Raises
    ------
    ValueError
        When the text is not JSON.
    """
    document = json.loads(dataset_info)
    return [sum(int(n) for n in s.get("shardLengths", [])) for s in document.get("splits", [])
            if split is None or s.get("name") == split]


def feature_names(features_json: Union[str, bytes]) -> frozenset:
    """The feature names a ``features.json`` (:meth:`TfdsDataset.features_json`) declares.

    Raises
    ------
    ValueError
        When the text is not JSON.
    """
    return frozenset(json.loads(features_json).get("featuresDict", {}).get("features", {}))


def imagenet_c_config(corruption: str, severity: int) -> str:
    """TFDS config name of one ImageNet-C corruption and severity, e.g. ``'fog_3'``."""
    return f"{corruption}_{severity}"


#: ImageNet-C as TFDS's ``imagenet2012_corrupted`` (version 3.1.0, 95 configs, split validation),
#: plus our ``clean`` config (the registered builder lacks it, so ``tfds.load`` reads it from files).
BENCHMARK_CITATION = ("@inproceedings{hendrycks2019robustness,\n"
                      "  title={Benchmarking Neural Network Robustness to Common Corruptions and Perturbations},\n"
                      "  author={Dan Hendrycks and Thomas Dietterich},\n"
                      "  booktitle={International Conference on Learning Representations},\n"
                      "  year={2019},\n}")
"""BibTeX of Hendrycks & Dietterich (ICLR 2019), cited by the ImageNet-C and ImageNet-P datasets."""
BENCHMARK_HOMEPAGE = "https://github.com/hendrycks/robustness"

IMAGENET2012_CORRUPTED = TfdsDataset(
    name="imagenet2012_corrupted",
    version="3.1.0",
    features=MappingProxyType({
        "image": Image(shape=(IMAGE_SIZE, IMAGE_SIZE, 3), encoding_format="jpeg"),
        "label": ClassLabel(names=imagenet_wnids()),
        "file_name": Text(),
    }),
    config_descriptions=MappingProxyType({
        **{imagenet_c_config(c, s): f"corruption type = {c}, severity = {s}"
           for c in CORRUPTIONS for s in SEVERITIES},
        CLEAN: "clean images (ours, not TFDS's): each image as the corruptions receive it, same encoding"}),
    description=("ImageNet-C built by imagenet-cp: the ImageNet validation images, Resize(256) + "
                 "CenterCrop(224), corrupted as hendrycks/robustness's make_imagenet_c.py does, with a "
                 "per-example seed, saved as Pillow JPEG q85 (the same bytes as the ImageNet-C/ tree)."),
    citation=BENCHMARK_CITATION,
    homepage=BENCHMARK_HOMEPAGE,
    supervised_keys=("image", "label"),
    release_notes=MappingProxyType({
        "3.1.0": "imagenet-cp: faithful to the reference recipe, per-example seeds, Pillow JPEG q85."}),
)
