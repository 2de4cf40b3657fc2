"""What ``--formats webdataset`` costs per image: the shard writing of a built release, timed.

The build writes a config's shards in the stage that also writes its manifest: it reads the
config's tree files back in key order and writes them, framed as tar members, with a ``.cls``
member each (:mod:`pipelines.formats.webdataset`). This measures that work on a release that is
already built, into a scratch folder (the release is not changed): CPU and wall milliseconds per
image, and the bytes a shard adds per image over the tree file (tar headers and padding).
"""
from __future__ import annotations

import os
import tempfile
import time

from schemas.release import MANIFEST_DIR

from pipelines.formats import storage
from pipelines.formats.webdataset import is_folder_tree, manifest_samples, write_shards

__all__ = ["measure_webdataset", "format_webdataset_table"]


def measure_webdataset(release_dir: str, repeats: int = 3) -> dict:
    """Time writing the shards of every folder-tree config of ``release_dir`` (best of ``repeats``).

    Returns
    -------
    dict
        ``images`` (samples written per repeat), ``configs``, ``ms_per_image`` (wall) and
        ``cpu_ms_per_image`` (best repeat), ``tree_bytes_per_image``, ``shard_bytes_per_image``.

    Raises
    ------
    ValueError
        If the release has no folder-tree config.
    """
    configs = {}
    for part in storage.list_files(release_dir, MANIFEST_DIR):
        samples = manifest_samples(storage.read_bytes(storage.join(release_dir, part)).decode("utf-8").splitlines())
        if is_folder_tree(samples):
            configs[part.rsplit("/", 1)[1][:-len(".jsonl")]] = samples
    if not configs:
        raise ValueError(f"{release_dir} has no config of a folder tree (a built ImageNet-C/P release is needed)")
    images = sum(len(s) for s in configs.values())
    tree_bytes = sum(size for samples in configs.values() for _, _, size, _ in samples)
    best_wall, best_cpu, shard_bytes = float("inf"), float("inf"), 0
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="wds-bench-") as scratch:
            wall, cpu = time.perf_counter(), time.process_time()
            infos = [info for config, samples in configs.items()
                     for info in write_shards(scratch, config, samples,
                                              read=lambda p: storage.read_bytes(storage.join(release_dir, p)))]
            best_wall = min(best_wall, time.perf_counter() - wall)
            best_cpu = min(best_cpu, time.process_time() - cpu)
            shard_bytes = sum(os.path.getsize(os.path.join(scratch, i.path)) for i in infos)
    return {"images": images, "configs": len(configs), "ms_per_image": 1000 * best_wall / images,
            "cpu_ms_per_image": 1000 * best_cpu / images, "tree_bytes_per_image": tree_bytes / images,
            "shard_bytes_per_image": shard_bytes / images}


def format_webdataset_table(result: dict) -> str:
    """The figures of :func:`measure_webdataset` as lines of text."""
    extra = result["shard_bytes_per_image"] - result["tree_bytes_per_image"]
    return "\n".join([
        f"webdataset shards: {result['images']} images in {result['configs']} configs",
        f"  {result['ms_per_image']:.3f} ms per image wall, {result['cpu_ms_per_image']:.3f} ms CPU",
        f"  {result['shard_bytes_per_image']:.0f} bytes per image in the shards, {result['tree_bytes_per_image']:.0f} "
        f"in the tree (+{extra:.0f}, {100 * extra / result['tree_bytes_per_image']:.1f}%)"])
