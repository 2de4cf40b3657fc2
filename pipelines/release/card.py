"""The dataset card of a release: ``README.md`` with the YAML front matter the Hugging Face Hub reads.

:func:`dataset_card` is a pure function of ``release.json``, the configs (name, examples, the
Hub's ``configs:`` entries) and the label names: equal inputs give equal text. The front matter
holds ``license``, ``pretty_name``, ``task_categories``, ``size_categories``, ``tags``,
``configs`` (so that ``datasets.load_dataset(RELEASE_DIR, "<config>")`` loads a config) and the
BibTeX in ``citation_bibtex``; the text says what the release is, how to load it, how to check a
download against the release digest, how it was built, where it deviates from the reference,
whose terms its inputs carry and what to cite.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import yaml

from schemas.edition import Card
from schemas.editions import get_edition
from schemas.inputs import Input
from schemas.publication import BENCHMARKS, OFFICIAL_RELEASE_TERMS, edition_and_benchmark, size_category
from schemas.release import BuildSettings, CSettings, Release, ReleaseInput

from pipelines.formats.release_formats import loading_lines
from pipelines.formats.release_sink import CardContext

__all__ = ["COMMANDS", "NOT_OPTIONS", "ON_BY_DEFAULT", "edition_card", "release_input", "build_command", "title",
           "what", "citations", "front_matter", "dataset_card"]

#: Benchmark -> the build command that makes it.
COMMANDS = {"c": "build-c", "p": "build-p", "vcr": "build-vcr", "a": "package-a", "o": "package-o"}

#: release.json ``config`` keys that are facts, not options of the build command.
NOT_OPTIONS = frozenset({"image_ids_sha256", "jpeg_quality", "image_format", "vif_variant"})

#: Boolean options whose default is on: written as ``--no-<name>`` when off.
ON_BY_DEFAULT = frozenset({"clean", "simd"})


def edition_card(release: Release) -> Card:
    """What the card says of the release's edition (:attr:`schemas.edition.Edition.card`).

    Raises
    ------
    ValueError
        If the release names an edition that is not registered.
    """
    return get_edition(edition_and_benchmark(release)[0]).card


def release_input(release: Release) -> Input:
    """The input data set the release was built from: its ``source_family`` (the edition's first
    family where ``release.json`` names none) in the edition's card.

    Raises
    ------
    ValueError
        If the edition is not registered or reads no such family.
    """
    return edition_card(release).input(release.source_family)


def build_command(release: Release) -> str:
    """The ``imagenet-cp`` command line that rebuilds the release, from its recorded config."""
    benchmark = edition_and_benchmark(release)[1]
    words = ["imagenet-cp", COMMANDS[benchmark]]
    if (release.input or ReleaseInput()).kind != "sample":
        words += ["--input", "INPUT"]
    for key, value in sorted((release.config.to_json() if release.config else {}).items()):
        option = "--" + key.replace("_", "-")
        if key in NOT_OPTIONS or value is None:
            continue
        if isinstance(value, bool):
            if key in ON_BY_DEFAULT and not value:
                words.append(f"--no-{key.replace('_', '-')}")
            elif value and key not in ON_BY_DEFAULT:
                words.append(option)
            continue
        words += [option, ",".join(map(str, value)) if isinstance(value, list) else str(value)]
    return " ".join(words + ["--output", "RELEASE"])


def title(release: Release) -> str:
    """The release's name: an edition's official tree name (``Tiny-ImageNet-C``, ``CIFAR-10-P``),
    otherwise the benchmark's with the edition's size (``ImageNet-C (224x224)``)."""
    edition, benchmark = edition_and_benchmark(release)
    tree = release.tree or ""
    if edition != "imagenet" and tree[:1].isupper():
        return tree
    suffix = edition_card(release).title_suffix if BENCHMARKS[benchmark].resized else ""
    return f"{BENCHMARKS[benchmark].title} ({suffix})" if suffix else BENCHMARKS[benchmark].title


def what(release: Release) -> str:
    """What the release holds, e.g. ``'the CIFAR-10 test set under 15 common corruptions ...'``."""
    return BENCHMARKS[edition_and_benchmark(release)[1]].what.format(images=release_input(release).name)


def citations(release: Release) -> list[str]:
    """BibTeX entries to cite: the benchmark's papers, the edition's, the input's."""
    entries = list(BENCHMARKS[edition_and_benchmark(release)[1]].citations)
    entries += [c for c in (edition_card(release).citation,) if c]
    return entries + [release_input(release).citation]


def front_matter(release: Release, examples: int, hf_configs: Sequence[dict]) -> dict:
    """The YAML front matter of the card, as data."""
    edition, benchmark = edition_and_benchmark(release)
    matter = {
        "pretty_name": title(release),
        "license": release_input(release).license,
        "task_categories": [BENCHMARKS[benchmark].task],
        "size_categories": [size_category(examples)],
        "tags": ["robustness", BENCHMARKS[benchmark].tag, "imagenet-cp", f"benchmark-{benchmark}", f"edition-{edition}"],
    }
    source = release_input(release)
    if source.license_name:
        matter.update(license_name=source.license_name, license_link=source.license_url)
    if hf_configs:
        matter["configs"] = [dict(entry) for entry in hf_configs]
    matter["citation_bibtex"] = "\n\n".join(citations(release))
    return matter


class _CardDumper(yaml.SafeDumper):
    """YAML of the front matter: multi-line strings (the BibTeX) as literal blocks."""


_CardDumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _or_unknown(value) -> str:
    """A recorded value, ``?`` where the release does not record it."""
    return "?" if value is None else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def _loading(release: Release, hf_configs: Sequence[dict], first: str) -> list[str]:
    """``## Loading``: each format's lines (:func:`pipelines.formats.release_formats.loading_lines`)."""
    return ["## Loading", ""] + loading_lines(CardContext(release, first, tuple(hf_configs)))


def _checking() -> list[str]:
    return ["## Checking a download", "",
            "The maintainer posts one value beside the download, the **release digest**: the SHA-256 of "
            "`SHA256SUMS`, which lists the SHA-256 of every other file (this card included). To check a copy:", "",
            "```sh", "sha256sum SHA256SUMS        # must print the posted release digest",
            "sha256sum -c SHA256SUMS     # every file as listed",
            "imagenet-cp verify RELEASE_DIR   # and the TFDS records, videos and manifests, as the loaders read them",
            "```", "",
            "`imagenet-cp verify` prints the release digest as its last line.", ""]


def _seed(release: Release):
    """``config.seed`` of a build, ``?`` where the release records none."""
    seed = release.config.seed if isinstance(release.config, BuildSettings) else None
    return "?" if seed is None else seed


def _rng(release: Release) -> str:
    """``config.rng`` of an ImageNet-C build; the reference's legacy streams where none is recorded."""
    rng = release.config.rng if isinstance(release.config, CSettings) else None
    return "reference (legacy RandomState)" if rng is None else rng


def _provenance(release: Release) -> list[str]:
    source = release.input or ReleaseInput()
    lines = ["## How it was built", "", "```sh", build_command(release), "```", ""]
    facts = [("input", f"{_or_unknown(source.kind)}, {_or_unknown(source.images)} images"),
             ("input checksum (SHA-256 of `sources.jsonl`)", f"`{_or_unknown(source.sha256)}`"),
             ("release seed", _seed(release)),
             ("random streams (`rng`)", _rng(release)),
             ("manifest digest", f"`{_or_unknown(release.manifest.sha256 if release.manifest else None)}`"),
             ("release format", _or_unknown(release.format))]
    lines += _table(("fact", "value"), facts) + ["", "Library versions (from the workers):", ""]
    lines += _table(("library", "version"), sorted((release.library_versions or {}).items()))
    return lines + ["", "Every value above is in `release.json`; the manifests (`manifest/<config>.jsonl`) give each "
                        "example's key, label, seed and SHA-256.", ""]


def dataset_card(release: Release, config_examples: Mapping[str, int], hf_configs: Sequence[dict]) -> str:
    """The text of ``README.md`` for a release.

    Parameters
    ----------
    release : Release
        Its ``release.json``.
    config_examples : mapping
        Config name -> number of examples, in the manifests' order.
    hf_configs : sequence of dict
        The Hub's ``configs:`` entries (:func:`pipelines.release.hf_index.hf_configs`).
    """
    benchmark = edition_and_benchmark(release)[1]
    facts = BENCHMARKS[benchmark]
    examples = sum(config_examples.values())
    matter = yaml.dump(front_matter(release, examples, hf_configs), Dumper=_CardDumper, sort_keys=False,
                       allow_unicode=True, width=10_000)
    first = next(iter(config_examples), "")
    lines = ["---", matter.rstrip("\n"), "---", "", f"# {title(release)}", "",
             f"{title(release)} holds {what(release)}. "
             f"This release was built by `imagenet-cp`: {_count(examples, 'example')} in "
             f"{_count(len(config_examples), 'config')}.", ""]
    lines += _table(("config", "examples"), list(config_examples.items())) + [""]
    if not hf_configs and benchmark == "p":
        lines += ["The videos (H.264 MP4) have no Hugging Face config: read them with OpenCV "
                  "(`cv2.VideoCapture`, as the reference evaluator) or through TFDS.", ""]
    lines += _loading(release, hf_configs, first) + _checking() + _provenance(release)
    lines += ["## Deviations from the reference", ""]
    lines += [f"- {text}" for encoding, text in facts.deviations if encoding in ("", release.encoding)]
    lines += ["- The full list, measured against the reference outputs: `docs/reference/fidelity.md` of imagenet-cp.",
              "", "## Licence terms of the inputs", "", release_input(release).terms, "",
              OFFICIAL_RELEASE_TERMS, "", "## Citation", "", "```bibtex", "\n\n".join(citations(release)), "```", ""]
    return "\n".join(lines)
