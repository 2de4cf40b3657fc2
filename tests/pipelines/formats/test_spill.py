"""Spill files: the shuffles of a build carry references, never example bytes or pixels."""
import os
import pickle
import random

import pytest

from schemas.configs import ImageNetPConfig
from pipelines.beam.imagenet_p import _DecodeImagesFn
from pipelines.formats.parts import read_ledger
from pipelines.formats.release_formats import TfdsRecords, TreeFiles
from pipelines.formats.release_sink import ReleaseFiles
from pipelines.beam.write_release import _WriteOutputFilesFn, write_group
from pipelines.formats.spill import SpillRef, SpillWriter, read_spilled
from pipelines.formats.tfrecord import encode_example, frame_record
from schemas.records import Locator, OutputRecord, SourceEntry, SourceImage
from schemas.release import SPILL_DIR
from schemas.tfds import IMAGENET2012_CORRUPTED

GROUP = "fog_3"
SHARDS = 2


def record(index: int) -> OutputRecord:
    key = f"fog/3/n01440764/ILSVRC2012_val_{index:08d}.JPEG"
    jpeg = bytes([index % 256]) * (1000 + index)
    return OutputRecord(key=key, group=GROUP, path=f"ImageNet-C/{key}", data=jpeg,
                        example={"image": jpeg, "label": 0, "file_name": key.rsplit("/", 1)[1]},
                        metadata={"image_key": key})


def run_bundle(dofn, elements):
    """Every output of one bundle of a DoFn, as a runner would drive it."""
    dofn.start_bundle()
    outputs = [out for element in elements for out in dofn.process(element)]
    dofn.finish_bundle()
    return outputs


def main_outputs(outputs):
    return [out for out in outputs if not hasattr(out, "tag")]


def test_spilled_values_read_back_in_any_order(tmp_path):
    values = [os.urandom(n) for n in (5, 0, 300, 17, 4096)]
    refs = []
    for bundle in (values[:2], values[2:]):
        writer = SpillWriter(str(tmp_path))
        refs += [writer.append(v) for v in bundle]
        writer.close()
    assert len(os.listdir(tmp_path / SPILL_DIR)) == 2 and len({r.path for r in refs}) == 2
    order = list(range(len(values)))
    random.Random(0).shuffle(order)
    assert read_spilled(refs[i] for i in order) == [values[i] for i in order]


def test_an_empty_bundle_leaves_no_spill_file(tmp_path):
    SpillWriter(str(tmp_path)).close()
    assert not (tmp_path / SPILL_DIR).exists()


def test_a_range_beyond_the_file_is_an_error(tmp_path):
    writer = SpillWriter(str(tmp_path))
    ref = writer.append(b"abc")
    writer.close()
    with pytest.raises(OSError, match="expected 10 bytes"):
        read_spilled([SpillRef(ref.path, 0, 10)])


def part_names(outputs):
    """The part names a writer emitted (from process and finish_bundle alike)."""
    return [getattr(out, "value", out) for out in outputs]


def run_writer(dofn, elements):
    dofn.start_bundle()
    outputs = [out for element in elements for out in dofn.process(element)]
    return part_names(outputs + list(dofn.finish_bundle() or []))


def test_output_writer_emits_part_names_not_outputs(tmp_path):
    dofn = _WriteOutputFilesFn(ReleaseFiles(str(tmp_path), IMAGENET2012_CORRUPTED, SHARDS), None, part_records=3, sinks=[TreeFiles()])
    dofn.setup()
    records = [record(i) for i in range(7)]
    names = run_writer(dofn, records)
    assert len(names) == 3 and all(group == GROUP and run[0] == GROUP for group, run in names)
    assert max(len(pickle.dumps(name)) for name in names) < 200  # the examples are >= 1000 bytes
    ledger = read_ledger(str(tmp_path))
    assert sorted(e.part for e in ledger) == sorted(run[1] for _, run in names)
    assert sum(e.records for e in ledger) == 7
    assert (tmp_path / records[0].path).read_bytes() == records[0].data


def test_output_writer_keeps_no_example_that_no_sink_reads(tmp_path):
    """A tree without TFRecords (``keep_examples=False``): the records carry no example and the
    parts spill nothing; a build whose sinks read examples refuses a record without one."""
    records = [OutputRecord(**{**vars(record(i)), "example": None}) for i in range(7)]
    dofn = _WriteOutputFilesFn(ReleaseFiles(str(tmp_path), IMAGENET2012_CORRUPTED, SHARDS), None, part_records=3,
                               sinks=[TreeFiles()], keep_examples=False)
    dofn.setup()
    assert len(run_writer(dofn, records)) == 3
    assert sum(e.records for e in read_ledger(str(tmp_path))) == 7 and not (tmp_path / SPILL_DIR).exists()
    assert all((tmp_path / r.path).read_bytes() == r.data for r in records)
    dofn = _WriteOutputFilesFn(ReleaseFiles(str(tmp_path / "tfds"), IMAGENET2012_CORRUPTED, SHARDS), None,
                               sinks=[TreeFiles()])
    dofn.setup()
    with pytest.raises(ValueError, match="no TFDS example, and a format of the release reads it"):
        run_writer(dofn, records[:1])


def test_output_writer_writes_held_records_in_batches_and_the_rest_at_the_bundle_end(tmp_path):
    records = [record(i) for i in range(5)]
    for batch, written_before_the_end in (((2, 1 << 30), 4), ((100, 2500), 3), ((100, 1 << 30), 0)):
        out = tmp_path / f"{batch[0]}-{batch[1]}"
        dofn = _WriteOutputFilesFn(ReleaseFiles(str(out), IMAGENET2012_CORRUPTED, SHARDS), None, batch=batch, sinks=[TreeFiles()])
        dofn.setup()
        dofn.start_bundle()
        assert [name for r in records for name in dofn.process(r)] == []  # no part was due
        assert sum((out / r.path).exists() for r in records) == written_before_the_end
        assert read_ledger(str(out)) == []
        names = part_names(dofn.finish_bundle())
        assert all((out / r.path).read_bytes() == r.data for r in records)
        (entry,) = read_ledger(str(out))
        assert entry.records == 5 and [run[1] for _, run in names] == [entry.part]


def shard_bytes(tmp_path, index=0, count=1):
    return (tmp_path / IMAGENET2012_CORRUPTED.config_dir(GROUP) / IMAGENET2012_CORRUPTED.shard_name(index, count)
            ).read_bytes()


def test_group_writer_merges_parts_in_key_order(tmp_path):
    writer = _WriteOutputFilesFn(ReleaseFiles(str(tmp_path), IMAGENET2012_CORRUPTED, 1), None, part_records=2, sinks=[TreeFiles()])
    writer.setup()
    records = [record(i) for i in range(6)]
    names = run_writer(writer, records[3:]) + run_writer(writer, records[:3])
    write_group(ReleaseFiles(str(tmp_path), IMAGENET2012_CORRUPTED, 1), GROUP, [run[1:] for _, run in names],
                [TfdsRecords()])
    examples = [encode_example(r.example) for r in sorted(records, key=lambda r: r.key)]
    assert shard_bytes(tmp_path) == b"".join(frame_record(e) for e in examples)
    keys = [line.split('"key":"')[1].split('"')[0] for line in (tmp_path / "manifest" / f"{GROUP}.jsonl").read_text().splitlines()]
    assert keys == sorted(r.key for r in records)


def test_a_record_in_two_parts_is_written_once(tmp_path):
    writer = _WriteOutputFilesFn(ReleaseFiles(str(tmp_path), IMAGENET2012_CORRUPTED, 1), None, part_records=2, sinks=[TreeFiles()])
    writer.setup()
    records = [record(i) for i in range(3)]
    first, again = run_writer(writer, records), run_writer(writer, records[1:])  # a rerun built two again
    write_group(ReleaseFiles(str(tmp_path), IMAGENET2012_CORRUPTED, 1), GROUP, [run[1:] for _, run in first + again],
                [TfdsRecords()])
    assert shard_bytes(tmp_path) == b"".join(frame_record(encode_example(r.example)) for r in records)
    assert len((tmp_path / "manifest" / f"{GROUP}.jsonl").read_text().splitlines()) == 3


def test_the_spread_of_the_videos_carries_one_entry_per_image(sample_folder):
    path = next(sample_folder.glob("*/*.JPEG"))
    key = f"{path.parent.name}/{path.name}"
    image = SourceImage(SourceEntry(key, path.parent.name, 0, Locator(str(path)), key), path.read_bytes())
    dofn = _DecodeImagesFn(ImageNetPConfig.select(["gaussian_noise", "rotate"]), None)
    dofn.setup()
    spread = main_outputs(run_bundle(dofn, [image]))
    assert spread == [image.entry] and len(pickle.dumps(spread[0])) < 1000  # not one per video, no bytes


def test_a_build_leaves_no_spill_folder(sample_release):
    release_dir, _ = sample_release
    assert not (release_dir / SPILL_DIR).exists()

