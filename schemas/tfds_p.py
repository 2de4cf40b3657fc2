"""TFDS declarations of ImageNet-P: the ``Video`` feature connector and the ``imagenet_p`` dataset.

TFDS has no ImageNet-P, so a release declares its own dataset, ``imagenet_p``, with one config per
perturbation dataset of the reference (``gaussian_noise``, ``gaussian_noise_2``, ..., ``shear``) and
the features ``video``, ``label`` and ``file_name``.

``tfds.features.Video`` is a ``Sequence`` of ``Image`` s: a ``tf.train.Example`` stores a video as
one BytesList holding every frame as an encoded image, in frame order, and TFDS decodes it back to
uint8 (T, H, W, 3). By default the frames are those decoded from the release's own MP4s (as the
official evaluator reads them), stored as PNGs, so TFDS and the MP4 tree score the same; a release
built with ``--tfds-frames lossless`` stores the frames before the H.264 encode instead
(``release.json`` says which). Read a config with
``tfds.builder_from_directory(DIR/tfds/imagenet_p/<config>/<version>)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional, Sequence

from schemas.imagenet_c import IMAGE_SIZE
from schemas.imagenet_p import PERTURBATIONS
from schemas.tfds import BENCHMARK_CITATION, BENCHMARK_HOMEPAGE, ClassLabel, Text, TfdsDataset
from schemas.wnids import imagenet_wnids

_FEATURES = "tensorflow_datasets.core.features."


@dataclass(frozen=True)
class Video:
    """``tfds.features.Video``: a sequence of encoded frames, stored as one BytesList.

    Attributes
    ----------
    shape : tuple
        ``(frames, height, width, channels)``; ``None`` for a length that varies (ImageNet-P has
        41 frames for translate and 31 for the others).
    encoding_format : str
        Image format of each stored frame (``'png'``: lossless).
    """

    shape: tuple
    encoding_format: str = "png"

    def config(self) -> dict:
        """The ``features.json`` entry, as ``Video.to_json_content`` writes it (unknown sizes are -1)."""
        return {"pythonClassName": _FEATURES + "video_feature.Video",
                "video": {"dtype": "uint8", "encodingFormat": self.encoding_format,
                          "shape": {"dimensions": [str(-1 if d is None else d) for d in self.shape]}}}

    def metadata_files(self, name: str) -> dict[str, str]:
        return {}


def imagenet_p_config(perturbation: str, difficulty: int) -> str:
    """TFDS config name of one perturbation dataset: the reference's folder name, e.g.
    ``'rotate'`` or ``'gaussian_noise_2'``.

    Raises
    ------
    ValueError
        On an unknown perturbation or a difficulty it does not have.
    """
    if perturbation not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {perturbation!r}; valid names: {', '.join(PERTURBATIONS)}")
    spec = PERTURBATIONS[perturbation]
    if difficulty not in spec.difficulties:
        raise ValueError(f"difficulty of {perturbation} must be one of {list(spec.difficulties)}, got {difficulty!r}")
    return spec.dataset_name(difficulty)


#: Every ImageNet-P dataset as ``(perturbation, difficulty)``, in table order (20: the three noise
#: types at difficulties 1..3, the other eleven at 1).
DATASETS = tuple((name, d) for name, p in PERTURBATIONS.items() for d in p.difficulties)

#: ImageNet-P as the TFDS dataset ``imagenet_p`` (version 1.0.0, 20 configs, split validation).
IMAGENET_P = TfdsDataset(
    name="imagenet_p",
    version="1.0.0",
    features=MappingProxyType({
        "video": Video(shape=(None, IMAGE_SIZE, IMAGE_SIZE, 3), encoding_format="png"),
        "label": ClassLabel(names=imagenet_wnids()),
        "file_name": Text(),
    }),
    config_descriptions=MappingProxyType({
        imagenet_p_config(name, d): (f"perturbation = {name}, difficulty = {d}, "
                                     f"{PERTURBATIONS[name].frames} frames, {PERTURBATIONS[name].subset} set")
        for name, d in DATASETS}),
    description=("ImageNet-P built by imagenet-cp: each ImageNet validation image, Resize(256), perturbed "
                 "into a sequence of 224x224 frames as hendrycks/robustness's make_imagenet_p.py does, with "
                 "a per-example seed. `video` holds, as PNGs, the frames decoded from the ImageNet-P/ tree's H.264 MP4s "
                 "(or the frames before the encode, for a release built with --tfds-frames lossless; "
                 "release.json says which); `file_name` is the source image's file name."),
    citation=BENCHMARK_CITATION,
    homepage=BENCHMARK_HOMEPAGE,
    supervised_keys=("video", "label"),
    release_notes=MappingProxyType({
        "1.0.0": "imagenet-cp: faithful to the reference schedules, per-example seeds, frames decoded from the release's MP4s."}),
)


@dataclass(frozen=True)
class PTfdsNames:
    """How the ImageNet-P release of one edition appears in TFDS.

    Attributes
    ----------
    name : str
        TFDS dataset name.
    frame_shape : tuple
        ``(height, width)`` of every frame, ``None`` where it varies (the 64 editions'
        motion_blur frames keep the image's aspect).
    labels : tuple of str
        Class names of the ``label`` feature.
    split : str
        The one split written.
    title : str
        What the dataset is, for its description.
    """

    name: str
    frame_shape: tuple
    labels: tuple
    split: str
    title: str


def _cifar10_labels() -> tuple:
    return ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


#: Edition -> TFDS names of its ImageNet-P datasets (224's is :data:`IMAGENET_P`).
P_TFDS_NAMES = MappingProxyType({
    "inception": PTfdsNames("imagenet_p_299", (299, 299), imagenet_wnids(), "validation",
                            "ImageNet-P at 299x299 (make_imagenet_p_inception.py)"),
    "tinyimagenet": PTfdsNames("tiny_imagenet_p", (None, None), (), "validation",
                               "Tiny-ImageNet-P at 64x64 (make_tinyimagenet_p.py; motion_blur frames 64 x "
                               "int(64 * long / short); labels: the input's wnids)"),
    "imagenet64": PTfdsNames("imagenet64x64_p", (None, None), imagenet_wnids(), "validation",
                             "ImageNet 64x64-P (make_imagenet_64_p.py; motion_blur frames 64 x int(64 * long / short))"),
    "cifar": PTfdsNames("cifar10_p", (32, 32), _cifar10_labels(), "test",
                        "CIFAR-10-P at 32x32 (make_cifar_p.py)"),
})


def p_dataset(edition: str, family: Optional[str] = None, class_names: Optional[Sequence[str]] = None) -> TfdsDataset:
    """The TFDS dataset of an edition's ImageNet-P release: :data:`IMAGENET_P` for ``'imagenet'``, else
    one generated from :data:`P_TFDS_NAMES` and the edition's table (same features and config names).

    ``family`` (``'cifar100'``: dataset ``cifar100_p``) and ``class_names`` (the input's classes, e.g.
    Tiny ImageNet's 200 wnids or CIFAR-100's names) override the edition's defaults.

    Raises
    ------
    ValueError
        On an edition without ImageNet-P.
    """
    if edition == "imagenet":
        return IMAGENET_P
    from schemas.imagenet_p_editions import P_EDITIONS
    if edition not in P_TFDS_NAMES:
        raise ValueError(f"no ImageNet-P TFDS dataset for edition {edition!r}; valid: imagenet, "
                         f"{', '.join(P_TFDS_NAMES)}")
    names, table = P_TFDS_NAMES[edition], P_EDITIONS[edition]
    name = "cifar100_p" if family == "cifar100" else names.name
    labels = tuple(class_names) if class_names else names.labels
    return TfdsDataset(
        name=name,
        version="1.0.0",
        features=MappingProxyType({
            "video": Video(shape=(None, *names.frame_shape, 3), encoding_format="png"),
            "label": ClassLabel(names=labels),
            "file_name": Text(),
        }),
        config_descriptions=MappingProxyType({
            p.dataset_name(d): f"perturbation = {name}, difficulty = {d}, {p.frames} frames, {p.subset} set"
            for name, p in table.perturbations.items() for d in p.difficulties}),
        split=names.split,
        description=(f"{names.title}, built by imagenet-cp with a per-example seed. `video` holds, as PNGs, the "
                     "frames of each sequence as the release's own files give them (decoded from its MP4s, or "
                     "the .npy frames; release.json says which)."),
        citation=BENCHMARK_CITATION,
        homepage=BENCHMARK_HOMEPAGE,
        supervised_keys=("video", "label"),
        release_notes=MappingProxyType({"1.0.0": "imagenet-cp: faithful to the reference schedules of this edition."}),
    )
