"""The published files of a release, made from its ``release.json`` and manifests: the dataset card
(``README.md``, :mod:`pipelines.release.card`), ``croissant.json`` (:mod:`pipelines.release.croissant`)
and the Hugging Face index (:mod:`pipelines.release.hf_index`).

:func:`pipelines.release.publish.write_publication` writes them; verify makes them again in memory
and compares (:mod:`pipelines.release.verify_publication`).
"""
from __future__ import annotations

import hashlib
from typing import Callable, Iterable, Mapping, Optional

from schemas.publication import CARD, CROISSANT
from schemas.release import RELEASE_JSON, Release, dumps, manifest_path

from pipelines.release.card import dataset_card
from pipelines.release.croissant import croissant_document
from pipelines.release.hf_index import config_facts, hf_configs, write_index
from pipelines.formats.manifests import read_manifest_part
from pipelines.release.verify_records import part_config

__all__ = ["render_publication"]


def render_publication(release_dir: str, release: Release, checksums: Iterable[tuple[str, str]],
                       packages: Mapping[str, str], open_output: Optional[Callable] = None
                       ) -> tuple[dict[str, str], dict[str, bytes]]:
    """The published files of a release: ``({index file: sha256}, {README.md: bytes, croissant.json: bytes})``.

    Parameters
    ----------
    release_dir : str
        The release (its manifests, TFDS label names and, for stacked arrays, TFDS records are read).
    release : Release
        Its ``release.json``.
    checksums : iterable of (str, str)
        ``(path, sha256)`` of its ``SHA256SUMS`` lines: ``croissant.json`` lists the digests of
        ``release.json`` and the manifest parts.
    packages : mapping
        ``packages/<tar>`` -> SHA-256 of the packed tars ``croissant.json`` lists (empty: none).
    open_output : callable, optional
        Relative path -> the stream an index file is written to (default: the release's file,
        written atomically; :func:`pipelines.release.hf_index.write_index`).
    """
    facts = {part_config(p): config_facts(read_manifest_part(release_dir, p)) for p in release.manifest_parts}
    index = write_index(release_dir, release, facts, lambda config: read_manifest_part(release_dir, manifest_path(config)),
                        open_output)
    card = dataset_card(release, {c: f.examples for c, f in facts.items()}, hf_configs(release, facts)).encode("utf-8")
    listed = {RELEASE_JSON, *(manifest_path(config) for config in facts)}  # what croissant.json lists
    digests = {path: digest for path, digest in checksums if path in listed or path.endswith(".parquet")}
    digests.update(index)
    digests[CARD] = hashlib.sha256(card).hexdigest()
    croissant = dumps(croissant_document(release, facts, digests, packages)).encode("utf-8")
    return index, {CARD: card, CROISSANT: croissant}
