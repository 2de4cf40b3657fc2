"""Every relative link of README.md and docs/ leads to a file of the repository and, with an
anchor, to a heading of that file (GitHub's anchor rule); no document links outside the repository
tree (a clone has nothing beside it); every file of the code a document names in backticks exists."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def links(path: Path):
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return [m.group(1) for m in LINK.finditer(text) if not re.match(r"[a-z]+:", m.group(1))]


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(p.relative_to(REPO)) for p in DOCUMENTS])
def test_relative_links_resolve(document):
    broken = []
    for link in links(document):
        target, _, fragment = link.partition("#")
        path = (document.parent / target).resolve() if target else document
        if REPO not in path.parents and path != REPO:
            broken.append(f"{link}: outside the repository")
        elif not path.exists():
            broken.append(f"{link}: no such file")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            broken.append(f"{link}: no heading #{fragment} in {path.relative_to(REPO)}")
    assert not broken, "\n".join(broken)


CODE_PATH = re.compile(r"`((?:scripts|pipelines|metrics|transforms|schemas|tests)/[\w/.\-]*\w)`")


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(p.relative_to(REPO)) for p in DOCUMENTS])
def test_named_code_paths_exist(document):
    missing = sorted({path for path in CODE_PATH.findall(document.read_text()) if not (REPO / path).exists()})
    assert not missing, f"{document.relative_to(REPO)} names files that do not exist: {missing}"
