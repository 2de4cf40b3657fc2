"""``imagenet-cp package-a`` / ``package-o``: a reviewed shortlist in the official layout.

From a filter run (``decisions.jsonl``, ``filter.json``) and a reviewer's decisions, write a
release directory that ``imagenet-cp verify`` checks::

    PKG/imagenet-a/<wnid>/<file>          the original bytes, never re-encoded
    PKG/imagenet-a/README.txt             the official README structure
    PKG/manifest/imagenet-a.jsonl         one row per file: candidate, scores, name fields, review
    PKG/sources.jsonl                     one row per accepted candidate (its bytes' SHA-256)
    PKG/release.json, PKG/SHA256SUMS       (release.json records the tar's size, SHA-256 and MD5)
    PKG/packages/imagenet-a.tar + SHA256SUMS   (reproducible tar, as ``imagenet-cp package``)

File names follow the release: ImageNet-A ``<p>_<pred1> _ <pred2>_<q>.<ext>`` with p the weak
label's probability (primary model, centre crop, ``%.6f``), pred1 / pred2 the centre-crop
predictions of the first two models (the single model's twice when there is one), and q the
primary model's probability of its prediction (float32 repr). ImageNet-O files go under the
predicted O class as ``<source synset>_<file>``. The meanings are recorded in ``release.json``.
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
from typing import Optional

import numpy as np

from schemas.adversarial import BIBTEX, DECISIONS, FILTER_JSON, KEPT, TASKS, DecisionRecord
from schemas.class_names import class_name
from schemas.edition import DEFAULT_EDITION
from schemas.publication import PUBLISHED_NAMES
from schemas.records import ManifestRecord, SourceRecord
from schemas.release import (LEGACY_EDITIONS, CHECKSUMS, MANIFEST_DIR, PACKAGES_DIR, RELEASE_FORMAT, RELEASE_JSON, SOURCES,
                             TMP_DIR, FilteredSettings, FilterSettings, PackageFile, Release, ReleaseCounts, ReleaseInput,
                             ReleaseManifest, is_safe_name, json_line)
from schemas.wnids import wnid_to_label
from transforms.ten_crop import CENTRE_CROP

from pipelines.formats.checksum_file import write_checksums
from pipelines.formats.lists import read_decisions, read_reviews
from pipelines.formats.release_document import read_release, write_release
from pipelines.release.package import write_tar
from pipelines.release.publish import write_publication
from pipelines.release.versions import library_versions
from pipelines.release.verify import file_sha256, relative_files

__all__ = ["NAME_FIELDS", "file_name", "readme_text", "package_set"]

NAME_FIELDS = {
    "imagenet_a": {"p": "probability of the weak label (primary model, centre crop, softmax over the class set), %.6f",
                   "pred1": "centre-crop prediction of model 1 (class short name)",
                   "pred2": "centre-crop prediction of model 2 (model 1's again when there is one model)",
                   "q": "primary model's centre-crop probability of its prediction, float32 repr"},
    "imagenet_o": {"source": "the candidate's source synset and original file name"},
}


def file_name(task: str, row: DecisionRecord) -> tuple[str, str, dict]:
    """``(folder wnid, file name, name field values)`` of an accepted row in the official layout."""
    extension = os.path.splitext(row.key)[1]
    models = row.fields["models"]
    if task == "imagenet_o":
        return row.confusion[0], f"{row.wnid}_{row.key.split('/', 1)[1]}", {"source": row.key}
    primary = models[0]
    predictions = [m["argmax"][CENTRE_CROP] for m in models[:2]]
    predictions += predictions[:1] * (2 - len(predictions))
    top = primary["top5"][CENTRE_CROP][0]
    fields = {"p": f"{primary['weak_prob'][CENTRE_CROP]:.6f}", "pred1": class_name(predictions[0]),
              "pred2": class_name(predictions[1]), "q": str(np.float32(top[1]))}
    return row.wnid, f"{fields['p']}_{fields['pred1']} _ {fields['pred2']}_{fields['q']}{extension}", fields


def readme_text(task: str, count: int, class_wnids) -> str:
    """README.txt in the structure of the official ImageNet-O README (algorithms.md, "Review and packaging")."""
    title = TASKS[task].dataset_title
    lines = [f"The {title} dataset contains {count:,} natural adversarial examples.", "", BIBTEX, "",
             f"There are {len(class_wnids)} classes we consider. The WordNet ID and a description of each class "
             "is as follows.", ""]
    lines += [f"{w} {class_name(w)}" for w in class_wnids]
    return "\n".join(lines) + "\n"


def _prepare(output_dir: str, tree: str) -> None:
    if os.path.isdir(output_dir) and os.listdir(output_dir):
        try:
            existing = read_release(output_dir).tree
        except (OSError, ValueError):
            existing = None
        if existing != tree:
            raise ValueError(f"{output_dir} is not empty and holds no {tree} package: use another --output")
        for name in (tree, MANIFEST_DIR, PACKAGES_DIR, SOURCES, RELEASE_JSON, CHECKSUMS, *PUBLISHED_NAMES):
            path = os.path.join(output_dir, name)
            shutil.rmtree(path) if os.path.isdir(path) else (os.remove(path) if os.path.exists(path) else None)
    os.makedirs(output_dir, exist_ok=True)


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = path + ".partial"
    with open(partial, "wb") as stream:
        stream.write(data)
    os.replace(partial, path)


def _write_checksums(directory: str, entries: list) -> None:
    """Write ``directory/SHA256SUMS`` (:func:`pipelines.formats.checksum_file.write_checksums`), and
    remove the folder its atomic write leaves behind (the package holds the listed files alone)."""
    write_checksums(directory, entries)
    shutil.rmtree(os.path.join(directory, TMP_DIR), ignore_errors=True)


def package_set(task: str, filtered_dir: str, accepted_path: str, output_dir: str,
                candidates: Optional[str] = None) -> dict:
    """Package the accepted items of a filter run; return the ``release.json`` document.

    Raises
    ------
    ValueError
        When the filter run is of another task, an accepted key was not shortlisted (``kept``),
        a candidate's bytes changed since filtering, or two files would get the same name.
    """
    tree = TASKS[task].tree
    try:
        with open(os.path.join(filtered_dir, FILTER_JSON), encoding="utf-8") as stream:
            run = json.load(stream)
        decisions = {r.key: r for r in read_decisions(os.path.join(filtered_dir, DECISIONS))}
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"{filtered_dir} is not a filter output: {err}") from err
    if run["task"] != task:
        raise ValueError(f"{filtered_dir} is a {run['task']} filter run, not {task}")
    reviews = read_reviews(accepted_path)
    accepted = sorted(k for k, r in reviews.items() if r["decision"] == "accept")
    unknown = [k for k in accepted if k not in decisions]
    not_kept = [f"{k} ({decisions[k].decision})" for k in accepted if k in decisions and decisions[k].decision != KEPT]
    if unknown or not_kept:
        raise ValueError("accepted items must be shortlisted candidates of the filter run; "
                         + "; ".join(filter(None, [unknown and f"unknown: {', '.join(unknown[:5])}",
                                                   not_kept and f"not shortlisted: {', '.join(not_kept[:5])}"])))
    if not accepted:
        raise ValueError(f"{accepted_path} accepts no item")
    candidates = candidates or run["candidates"]
    _prepare(output_dir, tree)

    rows, sources, names = [], [], {}
    for key in accepted:
        row = decisions[key]
        with open(os.path.join(candidates, row.source), "rb") as stream:
            data = stream.read()
        if hashlib.sha256(data).hexdigest() != row.sha256:
            raise ValueError(f"{key}: the candidate's bytes changed since filtering (SHA-256 differs)")
        folder, name, fields = file_name(task, row)
        if not is_safe_name(name):
            raise ValueError(f"{key}: cannot name the file {name!r}")
        relative = f"{folder}/{name}"
        if relative.casefold() in names:
            raise ValueError(f"{key} and {names[relative.casefold()]} would both be {tree}/{relative}: reject one")
        names[relative.casefold()] = key
        _write(os.path.join(output_dir, tree, folder, name), data)
        rows.append(ManifestRecord(relative, f"{tree}/{relative}", row.sha256, len(data), None, {
            "wnid": folder, "label": wnid_to_label()[folder], "candidate": key, "name_fields": fields,
            "decision_reason": row.reason, "confusion": list(row.confusion), "rank": row.rank,
            "rules": row.fields["rules"], "review": reviews[key]}))
        sources.append(SourceRecord(key, row.source, len(data), {"sha256": row.sha256,
                                                                 "metadata": row.fields.get("metadata", {})}))
    class_wnids = run["config"]["class_wnids"]
    _write(os.path.join(output_dir, tree, "README.txt"), readme_text(task, len(rows), class_wnids).encode("utf-8"))
    manifest = f"{MANIFEST_DIR}/{tree}.jsonl"
    manifest_bytes = "".join(json_line(r.to_json()) for r in sorted(rows, key=lambda r: r.key)).encode("utf-8")
    _write(os.path.join(output_dir, manifest), manifest_bytes)
    sources_bytes = "".join(json_line(s.to_json()) for s in sources).encode("utf-8")
    _write(os.path.join(output_dir, SOURCES), sources_bytes)
    per_class = collections.Counter(r.fields["wnid"] for r in rows)
    with open(accepted_path, "rb") as stream:
        accepted_sha256 = hashlib.sha256(stream.read()).hexdigest()
    packages = os.path.join(output_dir, PACKAGES_DIR)
    os.makedirs(packages, exist_ok=True)
    tar = os.path.join(packages, f"{tree}.tar")
    write_tar(output_dir, [tree], tar)
    md5 = hashlib.md5()
    with open(tar, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            md5.update(chunk)
    tar_sha256 = file_sha256(tar)
    _write_checksums(packages, [(os.path.basename(tar), tar_sha256)])
    release = Release(
        edition=DEFAULT_EDITION, benchmark=LEGACY_EDITIONS[tree][1], tree=tree, format=RELEASE_FORMAT,
        package=PackageFile(file=f"{PACKAGES_DIR}/{tree}.tar", bytes=os.path.getsize(tar), sha256=tar_sha256,
                            md5=md5.hexdigest()),
        config=FilteredSettings(filter=FilterSettings.from_json(run["config"]),
                                models=tuple(run["models"]), decisions_sha256=run["decisions_sha256"],
                                reviews_sha256=accepted_sha256, file_names=NAME_FIELDS[task]),
        input=ReleaseInput(kind="filtered", sha256=hashlib.sha256(sources_bytes).hexdigest(), images=len(sources)),
        counts=ReleaseCounts(images=len(rows), outputs=len(rows), failures=0, per_class=dict(sorted(per_class.items())),
                             reviewed=len(reviews), accepted=len(accepted)),
        manifest=ReleaseManifest(parts=(manifest,), records=len(rows), sha256=hashlib.sha256(manifest_bytes).hexdigest()),
        library_versions=library_versions(),
    )
    write_release(output_dir, release)
    listed = sorted(relative_files(output_dir, (PACKAGES_DIR, CHECKSUMS)))
    _write_checksums(output_dir, [(p, file_sha256(os.path.join(output_dir, p))) for p in listed])
    write_publication(output_dir)
    return release
