"""The one reader of each JSON-line file kind gives back the row its writer wrote, line for line."""
import json

import pytest

from pipelines.formats.lists import read_decisions, read_entry_list, read_failures, read_sources, write_entry_list
from pipelines.formats.manifests import read_manifest_part, read_manifests
from pipelines.formats.predictions import (FramePrediction, PredictionRecord, frame_line, logits_line,
                                           parse_frame_line, parse_logits_line, prediction_line, read_predictions)
from schemas.records import Failure, Locator, ManifestRecord, SourceEntry
from schemas.release import json_line


def write_lines(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json_line(row) for row in rows), encoding="utf-8")


def test_entry_lists_round_trip(tmp_path):
    entries = [SourceEntry("n01/a.JPEG", "n01", 1, Locator(str(tmp_path / "a.tar"), 512, 10, "tar"), "a.JPEG"),
               SourceEntry("n02/b.JPEG", "n02", 2, Locator(str(tmp_path / "b.JPEG")), "n02/b.JPEG")]
    path = write_entry_list(str(tmp_path), ".parts/entries/000000.jsonl", entries)
    assert list(read_entry_list(path)) == entries


def test_sources_failures_and_decisions_read_as_their_types(tmp_path):
    source = {"key": "n01/a.JPEG", "source": "a.JPEG", "bytes": 10, "wnid": "n01", "label": 1, "note": ""}
    write_lines(tmp_path / "sources.jsonl", [source])
    (row,) = read_sources(str(tmp_path / "sources.jsonl"))
    assert (row.key, row.source, row.size, row.fields["label"]) == ("n01/a.JPEG", "a.JPEG", 10, 1)
    assert row.to_json() == source
    failure = Failure("n01/b.JPEG", "b.JPEG", "decode", "cannot decode image")
    write_lines(tmp_path / "failures.jsonl", [failure.to_json()])
    assert list(read_failures(str(tmp_path / "failures.jsonl"))) == [failure]
    decision = {"key": "n01/a.jpg", "decision": "kept", "wnid": "n01", "source": "n01/a.jpg", "sha256": "0" * 64,
                "reason": "survives R1 and R2", "confusion": ["n01", "n02"], "rank": 1, "models": [], "rules": {}}
    write_lines(tmp_path / "decisions.jsonl", [decision])
    (kept,) = read_decisions(str(tmp_path / "decisions.jsonl"))
    assert kept.confusion == ("n01", "n02") and kept.fields == {"models": [], "rules": {}}
    assert kept.to_json() == decision


def test_manifest_parts_read_as_records_in_key_order(tmp_path):
    records = [ManifestRecord(f"fog/1/n01/{name}", f"ImageNet-C/fog/1/n01/{name}", "0" * 64, 5, None,
                              {"label": 1, "image_key": f"n01/{name}"}) for name in ("b.JPEG", "a.JPEG")]
    write_lines(tmp_path / "manifest" / "fog_1.jsonl", [records[1].to_json()])
    write_lines(tmp_path / "manifest" / "clean.jsonl", [records[0].to_json()])
    assert list(read_manifest_part(str(tmp_path), "manifest/fog_1.jsonl")) == [records[1]]
    assert read_manifests(str(tmp_path)) == [records[1], records[0]]
    (tmp_path / "manifest" / "clean.jsonl").write_text('{"key": "x"}\n')
    with pytest.raises(KeyError):
        read_manifests(str(tmp_path))


def test_prediction_lines_round_trip(tmp_path):
    records = [PredictionRecord("fog/1/n01/a.JPEG", 1, [1, 2, 3, 4, 5]), PredictionRecord("p/n01/a", 1, [[1] * 5] * 2)]
    (tmp_path / "fog_1.jsonl").write_text("".join(prediction_line(r) for r in records), encoding="utf-8")
    assert list(read_predictions(str(tmp_path / "fog_1.jsonl"))) == records
    assert json.loads(prediction_line(records[0])) == {"key": "fog/1/n01/a.JPEG", "label": 1, "top5": [1, 2, 3, 4, 5]}
    frame = FramePrediction(3, 31, 7, [7, 1, 2, 3, 4])
    assert frame_line(frame) == "[3,31,7,[7,1,2,3,4]]" and parse_frame_line(frame_line(frame)) == frame
    label, logits = parse_logits_line(logits_line(9, [0.5, -1.25]))
    assert label == 9 and logits.tolist() == [0.5, -1.25] and logits.dtype == "<f4"
