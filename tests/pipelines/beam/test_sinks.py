"""Formats as classes (pipelines.formats.release_sink): a new output format, or an edition's own sink, is
one class plugged into the build, which is not edited: its files are in the release and in SHA256SUMS,
``--force`` removes its folders, a resumed build writes them again, verify runs its check and the
card and the ``--formats`` help say what it declares (docs/dev/adding-a-format.md walks through the toy
format below)."""
from __future__ import annotations

import json
from dataclasses import replace

import apache_beam as beam
import pytest

from pipelines.beam.build import SourceSelection, run_build
from pipelines.beam.imagenet_c import build_imagenet_c, plan
from pipelines.beam.runner import RunOptions
from pipelines.beam.npy_release import ARRAYS_GROUP, SEQUENCE_ARRAYS_GROUP, StackedArrays
from pipelines.formats import storage
from pipelines.formats.parts import PartWriter, merge_runs
from pipelines.formats.release_formats import (FORMATS, TfdsRecords, TreeFiles, WebDatasetShards, formats_help,
                                               release_sinks)
from pipelines.formats.release_sink import ReleaseSink
from pipelines.release.output_folder import release_names
from pipelines.release.verify import verify_release
from schemas.configs import ImageNetCConfig
from schemas.records import Locator, SourceEntry
from schemas.release import parse_checksum_lines

pytestmark = pytest.mark.beam  # runs Beam builds: `pytest -m "not beam"` leaves it out

CONFIG = ImageNetCConfig.select(["contrast"], [1])
RUN = RunOptions(workers=1, progress_interval=3600)


def manifest_keys(release, config):
    return [json.loads(line)["key"] for line in (release / "manifest" / f"{config}.jsonl").read_text().splitlines()]


def key_index(fail_marker=None):
    """The toy format: ``--formats keys``, ``keys/<config>.txt``. Made here, in a function: Beam's workers
    get the class itself, pickled by value. With ``fail_marker``, its write step fails while that file exists."""

    class KeyIndex(ReleaseSink):
        """``--formats keys``: ``keys/<config>.txt``, the config's output keys in manifest order."""

        name = "keys"
        folders = ("keys",)
        help = "keys/<config>.txt, each config's output keys"

        @staticmethod
        def text(root, config):
            lines = storage.read_bytes(storage.join(root, f"manifest/{config}.jsonl")).splitlines()
            return "".join(json.loads(line)["key"] + "\n" for line in lines).encode("utf-8")

        def write_group(self, release, group, outputs):
            if fail_marker is not None and storage.exists(fail_marker):
                raise RuntimeError("the toy format failed")
            return [storage.write_atomic(release.output_dir, f"keys/{group}.txt", self.text(release.output_dir, group),
                                         group=group)]

        def check(self, root, release, listed):
            configs = [part.rsplit("/", 1)[-1][:-len(".jsonl")] for part in release.manifest_parts]
            return [f"keys/{config}.txt: not the keys of manifest/{config}.jsonl" for config in configs
                    if f"keys/{config}.txt" in listed
                    and storage.read_bytes(storage.join(root, f"keys/{config}.txt")) != self.text(root, config)]

        def card_lines(self, card):
            if self.name not in card.release.formats:
                return []
            return ["The output keys of a config, in manifest order:", "", "```python",
                    f'keys = open("RELEASE_DIR/keys/{card.first}.txt").read().split()', "```", ""]

    return KeyIndex


def test_a_new_format_is_one_class_registered_in_the_table(tmp_path, monkeypatch):
    KeyIndex = key_index()
    monkeypatch.setitem(FORMATS, KeyIndex.name, KeyIndex)  # the registration: nothing else is edited
    release = tmp_path / "release"
    build_imagenet_c(str(release), SourceSelection(), CONFIG, RUN, formats=["keys", "tfds", "tree"])

    for config in ("contrast_1", "clean"):
        keys = (release / "keys" / f"{config}.txt").read_text().splitlines()
        assert keys == manifest_keys(release, config) and len(keys) == 8
    listed = parse_checksum_lines((release / "SHA256SUMS").read_text().splitlines())
    assert {"keys/contrast_1.txt", "keys/clean.txt"} <= set(listed)
    assert json.loads((release / "release.json").read_text())["config"]["formats"] == ["keys", "tfds", "tree"]
    card = (release / "README.md").read_text()
    assert "The output keys of a config, in manifest order:" in card and 'open("RELEASE_DIR/keys/' in card
    assert "keys (keys/<config>.txt, each config's output keys)" in formats_help()
    assert verify_release(str(release)).ok

    (release / "keys" / "clean.txt").write_text("tampered\n")
    report = verify_release(str(release))
    assert report.changed == ["keys/clean.txt"]
    assert report.problems == ["keys/clean.txt: not the keys of manifest/clean.jsonl"]  # the format's own check


def test_force_removes_the_folders_a_format_owns(tmp_path, monkeypatch):
    KeyIndex = key_index()
    monkeypatch.setitem(FORMATS, KeyIndex.name, KeyIndex)
    assert "keys" in release_names()
    release = tmp_path / "release"
    build_imagenet_c(str(release), SourceSelection(), CONFIG, RUN, formats=["keys", "tree"])
    assert (release / "keys" / "contrast_1.txt").exists()

    other = ImageNetCConfig.select(["fog"], [1])
    build_imagenet_c(str(release), SourceSelection(), other, replace(RUN, force=True), formats=["keys", "tree"])
    assert sorted(p.name for p in (release / "keys").iterdir()) == ["clean.txt", "fog_1.txt"]
    assert verify_release(str(release)).ok


def test_a_resumed_build_writes_a_formats_files_again(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "fail"
    marker.write_text("")
    KeyIndex = key_index(str(marker))
    monkeypatch.setitem(FORMATS, KeyIndex.name, KeyIndex)
    release = tmp_path / "release"
    with pytest.raises(Exception):
        build_imagenet_c(str(release), SourceSelection(), CONFIG, RUN, formats=["keys", "tree"])
    assert not (release / "release.json").exists()
    (release / "keys").mkdir(exist_ok=True)
    (release / "keys" / "clean.txt").write_text("left by the interrupted build\n")

    marker.unlink()
    capsys.readouterr()
    build_imagenet_c(str(release), SourceSelection(), CONFIG, RUN, formats=["keys", "tree"])
    assert "resuming: 8 of 8 images are built already" in capsys.readouterr().err
    assert (release / "keys" / "clean.txt").read_text().splitlines() == manifest_keys(release, "clean")
    assert verify_release(str(release)).ok


def test_an_edition_sink_with_a_branch_of_its_own_reads_the_committed_parts(tmp_path):
    class RecordKeys(ReleaseSink):
        """``record-keys.txt``: every output key, sorted, from a branch over the committed parts."""

        checksum_part = "_record_keys"

        def expand(self, parts, release):
            out = release.output_dir

            def keys(element):
                config, names = element
                runs = [name[1:] for name in names if name is not None and name[0] == config]
                return [fields[0] for fields in merge_runs(out, config, runs)]

            return (parts
                    | "Keys" >> beam.FlatMap(keys)
                    | "AllKeys" >> beam.combiners.ToList()
                    | "WriteKeys" >> beam.Map(lambda keys: storage.write_atomic(
                        out, "record-keys.txt", "".join(k + "\n" for k in sorted(keys)).encode("utf-8"))))

    assert RecordKeys().has_branch and not WebDatasetShards().has_branch
    built = plan(CONFIG, SourceSelection())
    release = tmp_path / "release"
    run_build(str(release), replace(built, sinks=(*built.sinks, RecordKeys())), RUN)

    keys = sorted(manifest_keys(release, "contrast_1") + manifest_keys(release, "clean"))
    assert (release / "record-keys.txt").read_text().splitlines() == keys
    assert "record-keys.txt" in parse_checksum_lines((release / "SHA256SUMS").read_text().splitlines())
    assert verify_release(str(release)).ok


def test_release_sinks_are_the_formats_in_name_order_then_the_editions_made_for_the_input(monkeypatch):
    class Other(ReleaseSink):
        name = "another"

    monkeypatch.setitem(FORMATS, Other.name, Other)
    entries = [SourceEntry("b.png", "n1", 3, Locator("b.png"), "b.png"), SourceEntry("a.png", "n1", 1, Locator("a.png"), "a.png")]
    arrays = [StackedArrays((2, 2, 3), (1, 2), "T/labels.npy")]
    made = release_sinks(["webdataset", "tree", "another"], arrays, entries)
    assert [type(s) for s in made] == [Other, TreeFiles, WebDatasetShards, StackedArrays]
    assert made[3].keys == ("b.png", "a.png") and made[3].labels == (3, 1)  # input order, as listed
    assert [type(s) for s in release_sinks(["tfds"], arrays, entries)] == [TfdsRecords]  # the arrays are the tree
    with pytest.raises(ValueError, match="unknown output format 'tiff'; valid: another, tfds, tree, webdataset"):
        release_sinks(["tiff"], [], entries)
    with pytest.raises(ValueError, match="unknown output format 'hf'"):  # published, not a choice
        release_sinks(["hf"], [], entries)
    with pytest.raises(ValueError, match="no output format chosen"):
        release_sinks([], [], entries)


def test_one_npy_sink_stacks_c_severity_blocks_and_p_datasets(tmp_path):
    """The C layout (a block per severity, labels.npy) and the P layout (one block, a row shape per
    array) are the same sink, configured; it reads the rows the parts committed, a row that two
    parts hold (an image built again after an interruption) once."""
    import numpy as np

    from pipelines.formats.release_sink import ReleaseFiles
    from schemas.tfds import IMAGENET2012_CORRUPTED

    keys, out = ("k0", "k1"), str(tmp_path)

    def commit(*rows):
        """Commit ``(config, array path, image key, severity, value, shape)`` rows as one part;
        its ``(config, run name)`` s."""
        writer = PartWriter(out)
        for config, path, key, severity, value, shape in rows:
            line = json.dumps({"path": path, "image_key": key, "severity": severity})
            writer.add_stacked_output(config, f"{config}/{key}", 0, line, "0" * 64, b"example",
                                      np.full(shape, value, np.uint8).tobytes())
        return [(name[0], name) for name in writer.commit()]

    def configs(*committed):
        grouped = {}
        for config, name in (pair for names in committed for pair in names):
            grouped.setdefault(config, []).append(name)
        return sorted(grouped.items()) + [("_release", [None])]

    c = StackedArrays((1, 1, 3), (1, 5), "C/labels.npy", ARRAYS_GROUP, keys, (4, 7))
    p = StackedArrays({"P/t.npy": (2, 1, 1, 3)}, checksum_part=SEQUENCE_ARRAYS_GROUP, keys=keys)
    fog5 = ("fog_5", "C/fog.npy", "k1", 5, 9, (1, 1, 3))
    c_parts = configs(commit(fog5, ("fog_1", "C/fog.npy", "k0", 1, 1, (1, 1, 3))),
                      commit(("clean", "C/clean.npy", "k1", None, 2, (1, 1, 3)), fog5))
    p_parts = configs(commit(("t", "P/t.npy", "k1", None, 6, (2, 1, 1, 3))))
    release = ReleaseFiles(out, IMAGENET2012_CORRUPTED, 1)
    with beam.Pipeline() as pipeline:
        _ = pipeline | "CParts" >> beam.Create(c_parts) | "C" >> _Branch(c, release)
        _ = pipeline | "PParts" >> beam.Create(p_parts) | "P" >> _Branch(p, release)

    fog = np.load(tmp_path / "C" / "fog.npy")
    assert fog.shape == (4, 1, 1, 3) and fog[:, 0, 0, 0].tolist() == [1, 0, 0, 9]  # severity 1 rows, then 5
    assert np.load(tmp_path / "C" / "clean.npy")[:, 0, 0, 0].tolist() == [0, 2]
    assert np.load(tmp_path / "C" / "labels.npy").tolist() == [4, 7, 4, 7]
    sequences = np.load(tmp_path / "P" / "t.npy")
    assert sequences.shape == (2, 2, 1, 1, 3) and sequences[:, :, 0, 0, 0].tolist() == [[0, 0], [6, 6]]
    assert not (tmp_path / "P" / "labels.npy").exists()


class _Branch(beam.PTransform):
    def __init__(self, sink, release):
        super().__init__()
        self._sink, self._release = sink, release

    def expand(self, parts):
        return self._sink.expand(parts, self._release)
