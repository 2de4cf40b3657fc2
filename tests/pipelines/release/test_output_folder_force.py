"""One output-folder policy for every edition and benchmark: ``--force`` from one edition's release
to another's leaves only the new release (which verifies), and without ``--force`` the build refuses.

Tiny real builds through the CLI (one corruption or perturbation, severity or difficulty 1, two images)."""
import json
import os

import pytest

from schemas.editions import EDITIONS, release_identity
from pipelines.formats.release_formats import format_folders
from pipelines.release.output_folder import RELEASE_FILES, release_names
from pipelines.release.verify import verify_release
from scripts.cli import main as cli

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

SMALL = ["--workers", "1", "--limit", "2"]
C = ["build-c", "--corruptions", "contrast", "--severities", "1", *SMALL]
P = ["build-p", "--perturbations", "rotate", "--difficulties", "1", "--preset", "ultrafast", *SMALL]

#: (command, edition, benchmark, tree) of each build, in the order they replace each other in one folder:
#: CIFAR -> 224, 224 -> Tiny-ImageNet, Tiny-ImageNet -> CIFAR-10-P, CIFAR-10-P -> 64x64, 64x64 -> CIFAR.
CHAIN = [(C, "cifar", "c", "CIFAR-10-C"), (C, "imagenet", "c", "ImageNet-C"), (C, "tinyimagenet", "c", "Tiny-ImageNet-C"),
         (P, "cifar", "p", "CIFAR-10-P"), (C, "imagenet64", "c", "ImageNet-64x64-C"), (C, "cifar", "c", "CIFAR-10-C")]


def release_trees_in(folder) -> set:
    """The top-level names of ``folder`` that a release of any edition or benchmark could hold as its tree."""
    return set(os.listdir(folder)) & (set(release_names()) - set(RELEASE_FILES) - set(format_folders()))


def test_release_names_know_every_editions_tree():
    for edition in EDITIONS.values():
        for layout in edition.c.layouts.values():
            assert layout.tree in release_names()
        for tree in edition.p.trees if edition.p else ():
            assert tree in release_names()


def test_force_replaces_any_editions_release_with_any_other_and_the_result_verifies(tmp_path, capsys):
    output = str(tmp_path / "release")
    previous = None
    for command, edition, benchmark, tree in CHAIN:
        args = [*command, "--edition", edition, "--output", output]
        if previous is not None:
            assert cli(args) == 2, f"{previous} -> {edition} {benchmark} without --force must refuse"
            assert "--force to remove it" in capsys.readouterr().err
            assert release_trees_in(output) == {previous}
        assert cli([*args, "--force"]) == 0
        assert release_trees_in(output) == {tree}, f"{previous} -> {tree} left other trees"
        document = json.loads((tmp_path / "release" / "release.json").read_text())
        assert (document["edition"], document["benchmark"]) == (edition, benchmark) == release_identity(document)
        report = verify_release(output)
        assert report.ok, f"{previous} -> {tree}: {report.text()}"
        assert cli(["verify", output]) == 0
        previous = tree
