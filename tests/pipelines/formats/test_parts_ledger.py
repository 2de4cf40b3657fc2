"""The ledger of committed parts: the host that made each part, and the outputs a build in
progress has committed, each part read once."""
from __future__ import annotations

import socket

from pipelines.formats import storage
from pipelines.formats.parts import LEDGER_DIR, CommittedOutputs, CommittedRecords, PartWriter, read_ledger


def commit(output_dir: str, outputs: int, lines: int = 0) -> str:
    writer = PartWriter(output_dir)
    for i in range(outputs):
        writer.add_output("clean", f"key{i}", 0, "{}", "0" * 64, f"clean/key{i}.JPEG", 10, b"example")
    for i in range(lines):
        writer.add_line("_sources", f"key{i}", "{}")
    part = writer.part
    writer.commit()
    return part


def test_each_part_names_its_host_and_the_committed_outputs_grow_part_by_part(tmp_path, monkeypatch):
    output = str(tmp_path)
    earlier = commit(output, 3)
    counted = CommittedOutputs(output, before=[earlier])
    assert counted() == 0  # an earlier run's part is not this run's work
    commit(output, 2)
    commit(output, 0, lines=4)  # a list part: sources lines, no outputs
    assert counted() == 2
    reads = []
    monkeypatch.setattr(storage, "read_bytes", lambda path: reads.append(path) or b"")
    assert counted() == 2 and reads == []  # a part is read once
    monkeypatch.undo()
    assert {entry.host for entry in read_ledger(output)} == {socket.gethostname()}
    assert len(storage.list_files(output, LEDGER_DIR)) == 3


def test_committed_records_count_every_record_and_read_each_part_once(tmp_path, monkeypatch):
    output = str(tmp_path)
    counted = CommittedRecords(output)
    assert counted() == 0  # no ledger yet
    commit(output, 2)
    commit(output, 0, lines=4)  # the sources lines count too
    assert counted() == 6 == sum(entry.records for entry in read_ledger(output))
    reads = []
    monkeypatch.setattr(storage, "read_bytes", lambda path: reads.append(path) or b"")
    assert counted() == 6 and reads == []
    monkeypatch.undo()
    commit(output, 1)
    assert counted() == 7
