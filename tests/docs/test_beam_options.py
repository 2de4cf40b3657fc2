"""Every Beam option the docs show parses with Beam's own ``PipelineOptions``.

A documented command hands Beam what follows its ``--`` (``imagenet-cp build-c ... -- --runner=...``),
or what a make target's ``BEAM_ARGS='...'`` holds. Each such option must be one that Beam knows
(no typo, no option of another Beam version) with a value Beam accepts (``--flink_version`` is
checked against Beam's published Flink versions, for example).
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
ASSIGNMENT = re.compile(r'^([A-Z][A-Z0-9_]*)=(["\'])(.*?)\2', re.M)


def command_lines(text: str) -> list[str]:
    """The lines of the fenced blocks of ``text``: ``\\``-continued lines joined, comments dropped,
    ``$NAME`` replaced by a ``NAME="..."`` assignment of the same block, runs of spaces made one."""
    lines = []
    for block in FENCE.findall(text):
        names = {name: value for name, _, value in ASSIGNMENT.findall(block)}
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s#.*$", "", line).strip()
            for name, value in names.items():
                line = line.replace(f"${name}", value)
            if line:
                lines.append(" ".join(line.split()))
    return lines


def beam_options(line: str) -> list[str]:
    """The Beam options a command line hands over: after an ``imagenet-cp`` command's ``--``, or in
    ``BEAM_ARGS='...'``."""
    try:
        words = shlex.split(line)
    except ValueError:
        return []
    for word in words:
        if word.startswith("BEAM_ARGS="):
            return shlex.split(word[len("BEAM_ARGS="):])
    if "imagenet-cp" in words and "--" in words:
        after = words[words.index("--") + 1:]
        return after[:next((i for i, w in enumerate(after) if w in ("&&", "|", ";", "&")), len(after))]
    return []


def unknown_to_beam(options: list[str]) -> list[str]:
    """The options of ``options`` that none of Beam's ``PipelineOptions`` classes declares, parsed
    as ``PipelineOptions.get_all_options`` parses them (a bad value of a known option raises
    ``SystemExit``, as Beam's argument parser does)."""
    parser = _BeamArgumentParser(allow_abbrev=False)
    for cls in {str(cls): cls for cls in PipelineOptions.__subclasses__()}.values():
        cls._add_argparse_args(parser)  # what get_all_options does
    _, unknown = parser.parse_known_args(options)
    PipelineOptions(options).get_all_options(display_warnings=False)  # and Beam's own call accepts them
    return sorted(word.split("=", 1)[0] for word in unknown if word.startswith("--"))


def documented() -> list[tuple[str, str, list[str]]]:
    found = []
    for document in DOCUMENTS:
        for line in command_lines(document.read_text()):
            options = beam_options(line)
            if options:
                found.append((document.relative_to(REPO).as_posix(), line, options))
    return found


def test_the_docs_show_the_cluster_commands():
    runners = {option.split("=", 1)[1] for _, _, options in documented() for option in options
               if option.startswith("--runner=")}
    # Spark runs through Beam's Spark job server started on its own: PortableRunner (the SparkRunner would
    # start a job server jar holding Spark itself, which make engines does not build)
    assert {"DataflowRunner", "FlinkRunner", "PortableRunner"} <= runners


@pytest.mark.parametrize("document, line, options", documented(), ids=lambda v: v if isinstance(v, str) and
                         v.endswith(".md") else None)
def test_every_documented_beam_option_parses_with_beams_options(document, line, options):
    try:
        unknown = unknown_to_beam(options)
    except SystemExit:
        pytest.fail(f"{document}: Beam refuses a value in: {' '.join(options)}")
    assert unknown == [], f"{document}: options Beam does not know: {unknown} in `{line}`"


def test_a_misspelt_or_badly_valued_option_is_caught():
    assert unknown_to_beam(["--runner=FlinkRunner", "--flink_mastr=HOST:8081", "--s3_endpoint_url=http://x"]) == \
        ["--flink_mastr"]
    with pytest.raises(SystemExit):
        unknown_to_beam(["--flink_version=0.1"])
    assert beam_options("imagenet-cp verify s3://B/r -- --s3_region_name=R && echo done") == ["--s3_region_name=R"]
    assert command_lines('```bash\nS3="--a=1 --b=2"\nimagenet-cp x -- \\\n   $S3   # note\n```\n') == \
        ['S3="--a=1 --b=2"', 'imagenet-cp x -- --a=1 --b=2']
