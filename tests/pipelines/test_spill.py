"""Spill files: the shuffles of a build carry references, never example bytes or pixels."""
import os
import pickle
import random

import pytest

from pipelines.imagenet_p import DecodeImagesFn, ImageNetPConfig, VideoTask
from pipelines.release import WriteOutputFiles, WriteShard
from pipelines.spill import SpillRef, SpillWriter, read_spilled
from pipelines.tfrecord import encode_example, frame_record
from schemas.records import Locator, OutputRecord, SourceEntry, SourceImage
from schemas.release import SPILL_DIR
from schemas.tfds import IMAGENET2012_CORRUPTED

GROUP = "fog_3"
SHARDS = 2


def record(index: int) -> OutputRecord:
    key = f"fog/3/n01440764/ILSVRC2012_val_{index:08d}.JPEG"
    jpeg = bytes([index % 256]) * (1000 + index)
    return OutputRecord(key=key, group=GROUP, path=f"imagenet-c/{key}", data=jpeg,
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


def test_output_writer_sends_references_not_examples(tmp_path):
    dofn = WriteOutputFiles(str(tmp_path), IMAGENET2012_CORRUPTED, SHARDS, None)
    dofn.setup()
    records = [record(i) for i in range(4)]
    shuffled = main_outputs(run_bundle(dofn, records))
    assert len(shuffled) == 4
    for (_, _), (key, path, offset, length) in shuffled:
        assert all(isinstance(v, int) for v in (offset, length)) and isinstance(path, str)
    assert max(len(pickle.dumps(element)) for element in shuffled) < 400  # the examples are >= 1000 bytes
    examples = read_spilled(SpillRef(*value[1:]) for _, value in shuffled)
    assert examples == [encode_example(r.example) for r in records]
    assert (tmp_path / records[0].path).read_bytes() == records[0].data


def test_shard_writer_reads_spilled_examples_in_key_order(tmp_path):
    writer = WriteOutputFiles(str(tmp_path), IMAGENET2012_CORRUPTED, 1, None)
    writer.setup()
    records = [record(i) for i in range(6)]
    refs = [value for bundle in (records[3:], records[:3]) for _, value in main_outputs(run_bundle(writer, bundle))]
    random.Random(1).shuffle(refs)
    outputs = list(WriteShard(str(tmp_path), IMAGENET2012_CORRUPTED, 1).process(((GROUP, 0), refs)))
    examples = [encode_example(r.example) for r in sorted(records, key=lambda r: r.key)]
    shard = tmp_path / IMAGENET2012_CORRUPTED.config_dir(GROUP) / IMAGENET2012_CORRUPTED.shard_name(0, 1)
    assert shard.read_bytes() == b"".join(frame_record(e) for e in examples)
    assert main_outputs(outputs) == [(GROUP, (0, 6, sum(map(len, examples))))]


def test_a_retried_bundle_spills_to_a_new_file(tmp_path):
    writer = WriteOutputFiles(str(tmp_path), IMAGENET2012_CORRUPTED, 1, None)
    writer.setup()
    records = [record(i) for i in range(3)]
    failed, retried = (main_outputs(run_bundle(writer, records)) for _ in range(2))
    os.remove(failed[0][1][1])  # the failed attempt's outputs are dropped: its file is never read
    assert retried[0][1][1] != failed[0][1][1]
    list(WriteShard(str(tmp_path), IMAGENET2012_CORRUPTED, 1).process(((GROUP, 0), [v for _, v in retried])))
    shard = tmp_path / IMAGENET2012_CORRUPTED.config_dir(GROUP) / IMAGENET2012_CORRUPTED.shard_name(0, 1)
    assert shard.read_bytes() == b"".join(frame_record(encode_example(r.example)) for r in records)


def test_video_tasks_carry_no_pixels(sample_folder):
    path = next(sample_folder.glob("*/*.JPEG"))
    key = f"{path.parent.name}/{path.name}"
    image = SourceImage(SourceEntry(key, path.parent.name, 0, Locator(str(path)), key), path.read_bytes())
    dofn = DecodeImagesFn(ImageNetPConfig.select(["gaussian_noise", "rotate"]), None)
    dofn.setup()
    tasks = main_outputs(run_bundle(dofn, [image]))
    assert [(t.perturbation, t.difficulty) for t in tasks] == [
        ("gaussian_noise", 1), ("gaussian_noise", 2), ("gaussian_noise", 3), ("rotate", 1)]
    assert all(isinstance(t, VideoTask) and len(pickle.dumps(t)) < 1000 for t in tasks)


def test_a_build_leaves_no_spill_folder(sample_release):
    release_dir, _ = sample_release
    assert not (release_dir / SPILL_DIR).exists()
