"""Publishing a release: its digest, the dataset card and the Croissant file, and where packages may go.

- The **release digest** is the SHA-256 of the release's ``SHA256SUMS``: one value that pins every
  file (``sha256sum SHA256SUMS`` prints it). A maintainer posts it beside a download; the build,
  ``verify`` and ``package`` print it.
- :func:`write_publication` writes ``README.md`` (the dataset card, :mod:`pipelines.release.card`)
  and ``croissant.json`` (MLCommons Croissant, :mod:`pipelines.release.croissant`) from
  ``release.json`` and the manifests, plus the Hugging Face index ``metadata.parquet`` the card's
  configs load (:mod:`pipelines.release.hf_index`), and lists them in ``SHA256SUMS`` (appended; the build's lines
  keep their order), so that the release stays verifiable. Every build ends with it;
  :func:`publish_release` (``imagenet-cp publish``) runs it again on an existing release: an older
  one, or one packaged since, whose tars ``croissant.json`` then lists. Publishing twice writes the
  same bytes.
- :func:`check_package_output` refuses an ``--output`` of ``package`` inside the release (other
  than ``packages/``): the tars would become files of the release's tree and fail verify.
"""
from __future__ import annotations

import hashlib
import os
from typing import Optional

from schemas.release import CHECKSUMS, PACKAGES_DIR, RELEASE_JSON, manifest_path

from pipelines.formats import storage
from pipelines.formats.checksum_file import write_checksums
from pipelines.formats.parts import iter_file_chunks
from pipelines.formats.release_document import read_release

__all__ = ["DIGEST_LABEL", "release_packages", "release_digest", "digest_line", "check_package_output", "read_release",
           "add_checksum_lines", "publish_release", "write_publication"]

DIGEST_LABEL = "release digest (sha256 of SHA256SUMS)"


def release_digest(release_dir: str) -> Optional[str]:
    """SHA-256 of ``release_dir/SHA256SUMS`` (what ``sha256sum SHA256SUMS`` prints), None without one;
    read chunk by chunk (a whole ImageNet-C's lists 4.8 million files: 0.6 GB)."""
    path = storage.join(release_dir, CHECKSUMS)
    if not storage.exists(path):
        return None
    digest = hashlib.sha256()
    for chunk in iter_file_chunks(path):
        digest.update(chunk)
    return digest.hexdigest()


def digest_line(release_dir: str) -> Optional[str]:
    """``'release digest (sha256 of SHA256SUMS): <hex>'``, None without a ``SHA256SUMS``."""
    digest = release_digest(release_dir)
    return None if digest is None else f"{DIGEST_LABEL}: {digest}"


def _normalized(path: str) -> str:
    if storage.is_local(path):
        return os.path.realpath(os.path.abspath(path))
    return path.rstrip("/")


def check_package_output(release_dir: str, output_dir: Optional[str]) -> None:
    """Refuse an ``output_dir`` inside ``release_dir`` other than its ``packages/`` folder.

    Raises
    ------
    ValueError
        Naming both folders (the command prints it as one line and exits 2, writing nothing).
    """
    if output_dir is None:
        return
    release, output = _normalized(release_dir), _normalized(output_dir)
    if storage.is_local(release_dir) != storage.is_local(output_dir):
        return
    separator = os.sep if storage.is_local(release_dir) else "/"
    if output == _normalized(storage.join(release_dir, PACKAGES_DIR)):
        return
    if output == release or output.startswith(release.rstrip(separator) + separator):
        raise ValueError(f"--output {output_dir} is inside the release {release_dir}: the tars would become files "
                         f"of the release and fail verify; give a folder outside it, or leave --output out "
                         f"for {storage.join(release_dir, PACKAGES_DIR)}")


def add_checksum_lines(release_dir: str, files: dict[str, str]) -> None:
    """Put ``{relative path: sha256}`` into ``SHA256SUMS``: a listed path's line is replaced where it
    stands, the others are appended in path order (the build's lines keep their order)."""
    from pipelines.release.verify import iter_checksums

    def entries():  # the file streamed through
        pending = dict(files)
        for path, digest in iter_checksums(release_dir):
            yield path, pending.pop(path, digest)
        yield from ((path, pending[path]) for path in sorted(pending))

    write_checksums(release_dir, entries())


def publish_release(release_dir: str, check: bool = True) -> list[str]:
    """Verify a built release, then :func:`write_publication` under its lock; return the relative
    paths written.

    Parameters
    ----------
    release_dir : str
        A built release, local or on an object store.
    check : bool
        Verify the release first (default).

    Raises
    ------
    ValueError
        If the release fails verification (it is published only intact) or has no ``release.json``.
    """
    from pipelines.release.output_folder import FolderLock
    from pipelines.release.verify import verify_release

    try:
        lock = FolderLock(release_dir, "publish", create=False).acquire()
    except FileNotFoundError as err:
        raise ValueError(f"{release_dir} is not a release folder") from err
    try:
        report = verify_release(release_dir, include_packages=False) if check else None
        if report is not None and not report.ok:
            raise ValueError(f"{release_dir} fails verification, not published: {report.text().splitlines()[-1]}; "
                             f"run imagenet-cp verify {release_dir} for the full list")
        return write_publication(release_dir)
    finally:
        lock.release()


def release_packages(release_dir: str) -> dict[str, str]:
    """``packages/<tar>`` -> SHA-256 of the tars ``packages/SHA256SUMS`` lists (empty when not packed)."""
    from pipelines.release.verify import read_checksums

    packages_sums = storage.join(release_dir, f"{PACKAGES_DIR}/{CHECKSUMS}")
    packed = read_checksums(storage.join(release_dir, PACKAGES_DIR)) if storage.exists(packages_sums) else {}
    return {f"{PACKAGES_DIR}/{name}": digest for name, digest in packed.items()}


def write_publication(release_dir: str) -> list[str]:
    """Write the card, the Croissant file and the Hugging Face index of a sealed release
    (:func:`pipelines.release.publication.render_publication`) and list them in its ``SHA256SUMS`` (module doc); return the
    relative paths written.

    The caller holds the folder: a build writes them as its last step, :func:`publish_release`
    for an existing release (after ``package``, so that ``croissant.json`` lists the tars)."""
    from schemas.release import TMP_DIR

    from pipelines.release.publication import render_publication
    from pipelines.release.verify import iter_checksums

    written, documents = render_publication(release_dir, read_release(release_dir), iter_checksums(release_dir),
                                            release_packages(release_dir))
    for relative, data in documents.items():
        written[relative] = storage.write_atomic(release_dir, relative, data).sha256
    add_checksum_lines(release_dir, written)
    storage.delete_tree(storage.join(release_dir, TMP_DIR))
    return list(written)
