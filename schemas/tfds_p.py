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
from typing import Optional, Sequence, Union

from schemas.edition import Edition
from schemas.imagenet_p import PERTURBATIONS
from schemas.imagenet_p_editions import PTfdsNames
from schemas.tfds import BENCHMARK_CITATION, BENCHMARK_HOMEPAGE, BYTES_LIST, ClassLabel, Text, TfdsDataset

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
    stored_as = BYTES_LIST

    def stored(self, value: Sequence[bytes]) -> list:
        """The encoded frames, in order, as the values of one BytesList."""
        return list(value)

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

def p_dataset(edition: Union[str, Edition], family: Optional[str] = None,
              class_names: Optional[Sequence[str]] = None) -> TfdsDataset:
    """The TFDS dataset of an edition's ImageNet-P release, from its P facts (``edition.p``): the
    names of source ``family`` (:meth:`schemas.imagenet_p_editions.PEdition.tfds_names`), the
    features ``video`` / ``label`` / ``file_name`` and one config per dataset of its table.

    ``class_names`` (the input's classes, e.g. Tiny ImageNet's 200 wnids or CIFAR-100's names)
    replace the edition's labels.

    Raises
    ------
    ValueError
        On an edition without ImageNet-P.
    """
    from schemas.editions import get_edition

    edition = get_edition(edition)
    if edition.p is None:
        raise ValueError(f"edition {edition.name} has no ImageNet-P")
    table = edition.p
    names = table.tfds_names(family)
    labels = tuple(class_names) if class_names else names.labels
    return TfdsDataset(
        name=names.name,
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
        description=names.description or (
            f"{names.title}, built by imagenet-cp with a per-example seed. `video` holds, as PNGs, the "
            "frames of each sequence as the release's own files give them (decoded from its MP4s, or "
            "the .npy frames; release.json says which)."),
        citation=BENCHMARK_CITATION,
        homepage=BENCHMARK_HOMEPAGE,
        supervised_keys=("video", "label"),
        release_notes=MappingProxyType({"1.0.0": names.release_note}),
    )


#: ImageNet-P as the TFDS dataset ``imagenet_p`` (version 1.0.0, 20 configs, split validation).
IMAGENET_P = p_dataset("imagenet")


__all__ = ["DATASETS", "IMAGENET_P", "PTfdsNames", "Video", "imagenet_p_config", "p_dataset"]
