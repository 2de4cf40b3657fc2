"""``croissant.json``: MLCommons Croissant 1.1 metadata of a release, as ``mlcroissant`` reads it.

:func:`croissant_document` is a pure function of ``release.json``, the configs' facts
(:class:`~pipelines.release.hf_index.ConfigFacts`) and
the SHA-256 of the files it names. The distribution lists ``release.json``, each config's
manifest and the Hugging Face index files (:mod:`pipelines.release.hf_index`) with their SHA-256,
the category tars of ``packages/`` when the release has been packed, and one FileSet of image (or
video) files per config of a folder tree. One record set per config yields the examples:
``image`` (or ``video``), ``label``, the condition (``corruption``/``perturbation``) and its level
(``severity``/``difficulty``/``draw``), ``key``. A tree config's record set joins each file of its
FileSet to its manifest row by path; a config of stacked arrays (CIFAR) reads its parquet file. An
ImageNet-P record names its MP4 (``path``, ``frames``) instead of holding it: ``mlcroissant`` 1.1
has no video reader (its FileSet of ``video/mp4`` files is still listed).
"""
from __future__ import annotations

from typing import Mapping

from schemas.publication import BENCHMARKS, edition_and_benchmark
from schemas.release import RELEASE_FORMAT, TREE_FORMAT, Release, manifest_path

from pipelines.release.card import citations, release_input, title, what
from pipelines.release.hf_index import HF_DIR, ConfigFacts, condition_columns

__all__ = ["CONFORMS_TO", "CONTEXT", "ENCODINGS", "DATA_TYPES", "croissant_document"]

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"

CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/", "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract", "field": "cr:field",
    "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject", "fileSet": "cr:fileSet", "format": "cr:format",
    "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path", "recordSet": "cr:recordSet",
    "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated", "replace": "cr:replace",
    "samplingRate": "cr:samplingRate", "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}
"""The JSON-LD context of Croissant 1.x, as ``mlcroissant`` writes it."""

#: File suffix -> encoding format of the distribution.
ENCODINGS = {".jsonl": "application/jsonlines", ".json": "application/json", ".parquet": "application/x-parquet",
             ".tar": "application/x-tar", ".jpeg": "image/jpeg", ".jpg": "image/jpeg", ".png": "image/png",
             ".ppm": "image/x-portable-pixmap", ".pgm": "image/x-portable-graymap", ".bmp": "image/bmp",
             ".webp": "image/webp", ".mp4": "video/mp4"}
"""Encoding format by file suffix, lower case (an ImageNet-A file keeps its candidate's suffix)."""

#: datasets type -> Croissant data type of a field.
DATA_TYPES = {"string": "sc:Text", "int32": "sc:Integer", "float64": "sc:Float"}

def _encoding(path: str) -> str:
    return next(kind for suffix, kind in ENCODINGS.items() if path.lower().endswith(suffix))


def _file_object(path: str, sha256: str) -> dict:
    return {"@type": "cr:FileObject", "@id": path, "name": path, "contentUrl": path,
            "encodingFormat": _encoding(path), "sha256": sha256}


def _field(record_set: str, name: str, data_type: str, source: dict) -> dict:
    return {"@type": "cr:Field", "@id": f"{record_set}/{name}", "name": name, "dataType": data_type,
            "source": source}


def _column(file_id: str, column: str, **more) -> dict:
    return {"fileObject": {"@id": file_id}, "extract": {"column": column}, **more}


def _record_set(config: str, facts: ConfigFacts, release: Release, media_set: str) -> dict:
    """One config's record set (module doc)."""
    benchmark = edition_and_benchmark(release)[1]
    media, media_type = "image", "sc:ImageObject"
    table = f"{HF_DIR}/{config}.parquet" if facts.stacked else manifest_path(config)
    fields = [_field(config, "key", "sc:Text", _column(table, "key")),
              _field(config, "label", "sc:Integer", _column(table, "label"))]
    fields += [_field(config, name, DATA_TYPES[kind], _column(table, name))
               for name, kind in condition_columns(release)]
    if facts.stacked:
        fields.insert(0, _field(config, media, media_type, _column(table, "image", transform={"jsonPath": "bytes"})))
    elif benchmark == "p":  # mlcroissant 1.1 reads no MP4: the record names its video file
        fields += [_field(config, "path", "sc:Text", _column(table, "path")),
                   _field(config, "frames", "sc:Integer", _column(table, "frames"))]
    elif media_set:
        fields.insert(0, _field(config, media, media_type, {"fileSet": {"@id": media_set},
                                                            "extract": {"fileProperty": "content"}}))
        path = _field(config, "path", "sc:Text", {"fileSet": {"@id": media_set},
                                                  "extract": {"fileProperty": "fullpath"},
                                                  "transform": {"regex": "^(.*)$"}})
        path["references"] = _column(manifest_path(config), "path")
        fields.append(path)
    description = f"{config}: {facts.examples} examples of {BENCHMARKS[benchmark].title}"
    return {"@type": "cr:RecordSet", "@id": config, "name": config, "description": description,
            "key": {"@id": f"{config}/key"}, "field": fields}


def croissant_document(release: Release, configs: Mapping[str, ConfigFacts], digests: Mapping[str, str],
                       packages: Mapping[str, str] = None) -> dict:
    """The Croissant JSON-LD document of a release.

    Parameters
    ----------
    release : Release
        Its ``release.json``.
    configs : mapping
        Config name -> its :class:`~pipelines.release.hf_index.ConfigFacts`.
    digests : mapping
        Relative path -> SHA-256 of ``release.json``, the manifests and the index files.
    packages : mapping, optional
        ``packages/<tar>`` -> SHA-256 of the category tars, when packed.
    """
    source = release_input(release)
    listed = [p for p in ("release.json", *(manifest_path(c) for c in configs)) if p in digests]
    listed += sorted(p for p in digests if p.endswith(".parquet"))
    distribution = [_file_object(p, digests[p]) for p in listed]
    distribution += [_file_object(p, sha) for p, sha in sorted((packages or {}).items())]
    record_sets = []
    for config, facts in configs.items():
        media_set = ""
        if facts.examples and not facts.stacked and TREE_FORMAT in release.formats:
            media_set = f"files/{config}"
            distribution.append({"@type": "cr:FileSet", "@id": media_set, "name": media_set,
                                 "encodingFormat": _encoding(facts.first_path), "includes": list(facts.globs)})
        record_sets.append(_record_set(config, facts, release, media_set))
    return {
        "@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO,
        "name": title(release).replace(" ", "_").replace("(", "").replace(")", "").replace(",", ""),
        "description": f"{title(release)} built by imagenet-cp: {what(release)}.",
        "license": source.license_url,
        "url": "https://github.com/hendrycks/robustness",
        "version": (release.format or RELEASE_FORMAT).rsplit("/", 1)[-1] + ".0.0",
        "citeAs": "\n\n".join(citations(release)),
        "distribution": distribution, "recordSet": record_sets,
    }
