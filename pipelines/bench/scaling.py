"""How the ImageNet-C build scales: images per second and peak memory against image count and workers.

:func:`run_scaling` writes a synthetic ImageNet validation folder (:func:`write_synthetic_imagenet`:
random crops and flips of the ``skimage.data`` photographs at ImageNet's typical 500x375, as JPEG,
under real validation file names), then runs the real build (:func:`pipelines.beam.imagenet_c.build_imagenet_c`
on the local FnApiRunner, one SDK worker process per worker) for every image count and worker
count. Each build runs in a fresh driver process, so that every peak belongs to one build; it is
spawned, not forked (a fork of a process that has already run a Beam pipeline can hang in gRPC),
so a script calling :func:`run_scaling` needs the usual ``if __name__ == "__main__":`` guard.

Memory is the kernel's peak resident set (``VmHWM`` of ``/proc/<pid>/status``) of the driver and
of each worker process, read every :data:`POLL_SECONDS` while the build runs (Linux only). The
peak is a high-water mark kept by the kernel, so polling misses only a rise in the last interval
before a process exits.

Everything a run writes (the synthetic set and every build's release) lies in one scratch folder
under ``tempfile.gettempdir()`` (``TMPDIR``), removed only after the last build: no build creates
its files right after the previous one's were deleted. On an ext4 file system without a journal
the kernel skips inodes freed in the last one to six minutes when it allocates new ones, looking
each of them up, so files created just after a large deletion cost far more (0.25-0.6 CPU ms per
20 kB file on the AMD machine of ``docs/dev/performance.md``, 17 us on tmpfs) and a build's
figures would depend on the one before it.
"""
from __future__ import annotations

import io
import multiprocessing
import os
import resource
import shutil
import tempfile
import threading
import time
from typing import Optional, Sequence

import numpy as np
from apache_beam.internal import pickler
from PIL import Image

from schemas.configs import ImageNetCConfig
from schemas.imagenet_val import validation_wnids

from pipelines.bench.corruptions import BENCH_IMAGES, machine_info
from pipelines.bench.format_floor import measure_format_floor
from pipelines.beam.build import SourceSelection
from pipelines.beam.imagenet_c import build_imagenet_c
from pipelines.beam.runner import RunOptions
from pipelines.beam.progress import IMAGE_WORK_COUNTER

__all__ = ["SCALING_SIZES", "SCALING_WORKERS", "SYNTHETIC_SIZE", "SYNTHETIC_JPEG_QUALITY", "PORTRAIT_FRACTION",
           "POLL_SECONDS", "WORKER_MODULE", "synthetic_image", "bench_photo", "photo_crop", "write_synthetic_imagenet", "peak_rss_mib",
           "parent_pids", "descendant_pids", "command_line", "PeakMemory", "filesystem_type", "measure_build",
           "FULL_IMAGENET_C_OUTPUTS", "driver_memory_trend", "bench_ms_per_image", "build_cost", "measure_resume",
           "run_scaling", "format_scaling_table"]

SCALING_SIZES = (100, 250, 500)
"""Image counts of a scaling run."""

SCALING_WORKERS = (1, 2)
"""Worker counts of a scaling run; speed-ups are relative to the first."""

SYNTHETIC_SIZE = (500, 375)
"""Width and height of a landscape synthetic image (portrait ones are 375x500), ImageNet's commonest."""

SYNTHETIC_JPEG_QUALITY = 90
"""Quality of the synthetic JPEGs (typical of ImageNet files)."""

PORTRAIT_FRACTION = 0.25
"""Share of portrait images in the synthetic set."""

POLL_SECONDS = 0.2
"""Interval of the peak-memory readings."""

WORKER_MODULE = "apache_beam.runners.worker.sdk_worker_main"
"""The module a local Beam SDK worker process runs (``python -m``): how worker processes are told
apart from their ``/bin/sh -c`` launchers, whose one argument only contains it."""


def synthetic_image(index: int, seed: int = 0) -> np.ndarray:
    """Synthetic validation image ``index``: a random crop of one of the bench photographs,
    flipped half of the time, resized to :data:`SYNTHETIC_SIZE` (or its transpose).

    Parameters
    ----------
    index : int
        Image number, >= 1; with ``seed`` it fixes the image.
    seed : int
        Seed of the synthetic set, >= 0.

    Returns
    -------
    numpy.ndarray
        uint8 RGB, shape (375, 500, 3) or (500, 375, 3).
    """
    rng = np.random.default_rng([seed, index])
    photo = bench_photo(rng)
    width, height = SYNTHETIC_SIZE if rng.random() >= PORTRAIT_FRACTION else SYNTHETIC_SIZE[::-1]
    return np.asarray(photo_crop(rng, photo, width, height))


def bench_photo(rng: np.random.Generator) -> Image.Image:
    """One of the bench photographs, drawn by ``rng``."""
    return Image.fromarray(list(BENCH_IMAGES.values())[rng.integers(len(BENCH_IMAGES))]())


def photo_crop(rng: np.random.Generator, photo: Image.Image, width: int, height: int) -> Image.Image:
    """A random crop of ``photo`` (60-100 % of the largest of its aspect) resized to ``width`` x
    ``height`` pixels, flipped left-right half of the time; every draw from ``rng``."""
    scale = rng.uniform(0.6, 1.0) * min(photo.width / width, photo.height / height)
    crop_w, crop_h = round(width * scale), round(height * scale)
    left, top = rng.integers(photo.width - crop_w + 1), rng.integers(photo.height - crop_h + 1)
    image = photo.resize((width, height), Image.BILINEAR, box=(left, top, left + crop_w, top + crop_h))
    return image.transpose(Image.FLIP_LEFT_RIGHT) if rng.random() < 0.5 else image


def write_synthetic_imagenet(folder: str, count: int, seed: int = 0) -> str:
    """Write images 1..``count`` as ``folder/<wnid>/ILSVRC2012_val_<n>.JPEG`` and return ``folder``.

    Each file carries the name and class folder of validation image ``n`` in the ground truth,
    so a build reads the set as it reads ImageNet's validation folder.
    """
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= len(validation_wnids()):
        raise ValueError(f"count must be an int in 1..{len(validation_wnids())}, got {count!r}")
    for index in range(1, count + 1):
        wnid = validation_wnids()[index - 1]
        os.makedirs(os.path.join(folder, wnid), exist_ok=True)
        buffer = io.BytesIO()
        Image.fromarray(synthetic_image(index, seed)).save(buffer, format="JPEG", quality=SYNTHETIC_JPEG_QUALITY)
        with open(os.path.join(folder, wnid, f"ILSVRC2012_val_{index:08d}.JPEG"), "wb") as stream:
            stream.write(buffer.getvalue())
    return folder


def peak_rss_mib(pid: int) -> Optional[float]:
    """Peak resident set of process ``pid`` so far (``VmHWM``) in MiB; None once it has gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            line = next(line for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1]) / 1024


def parent_pids() -> dict[int, int]:
    """pid -> parent pid of every process (a scan of ``/proc``)."""
    parents = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as stat:
                    parents[int(entry.name)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    return parents


def descendant_pids(pid: int) -> list[int]:
    """Children of ``pid``, their children, and so on."""
    children: dict[int, list[int]] = {}
    for child, parent in parent_pids().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


def command_line(pid: int) -> tuple[str, ...]:
    """The arguments of ``pid``'s command line (empty once it has gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return tuple(cmdline.read().decode("utf-8", "replace").split("\0")[:-1])
    except OSError:
        return ()


class PeakMemory:
    """Peak RSS of a process and of its descendants, polled in a thread while it runs.

    ``peaks`` maps pid -> MiB and ``commands`` pid -> command line, for the process given and
    every descendant seen (the build's worker processes and their ``/bin/sh`` launchers).
    """

    def __init__(self, pid: int, interval: float = POLL_SECONDS):
        self.pid, self.interval, self.peaks, self.commands = pid, interval, {}, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.is_set():
            for pid in [self.pid, *descendant_pids(self.pid)]:
                peak = peak_rss_mib(pid)
                if peak is not None:
                    self.peaks[pid] = max(peak, self.peaks.get(pid, 0.0))
                    # read again while it runs: a child seen between its fork and its exec still shows
                    # its parent's command line
                    self.commands[pid] = command_line(pid) or self.commands.get(pid, ())
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _timed_build(connection, input_dir: str, output_dir: str, count: int, pickled_config: bytes,
                 workers: int) -> None:
    """Driver process: build, then send ``(seconds, images, outputs, failures, cpu_seconds,
    image_work_cpu_seconds)`` through ``connection``; ``cpu_seconds`` is the CPU time of the driver
    and of its finished child processes (the SDK workers, which the runner stops and reaps before
    the build returns), Python's start-up and imports included; ``image_work_cpu_seconds`` is the
    part of it the workers spent on the images' own work (the build's counter
    :data:`pipelines.beam.progress.IMAGE_WORK_COUNTER`). The config comes pickled by Beam's
    pickler (:func:`_pickled`)."""
    config = pickler.loads(pickled_config)
    start = time.perf_counter()
    result = build_imagenet_c(output_dir, SourceSelection(input_dir, limit=count), config,
                              RunOptions(workers=workers, progress_interval=3600))
    seconds = time.perf_counter() - start
    counts = result.release.counts
    cpu_seconds = sum(usage.ru_utime + usage.ru_stime for usage in (
        resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))
    connection.send((seconds, counts.images, counts.outputs, counts.failures, cpu_seconds,
                     result.counters.get(IMAGE_WORK_COUNTER, 0) / 1e6))
    connection.close()


def _pickled(config: ImageNetCConfig) -> bytes:
    """``config`` as Beam pickles it for its workers: a spawned process's arguments go through the
    standard pickle, which cannot pickle the edition's read-only tables (``MappingProxyType``)."""
    return pickler.dumps(config)


def _run_timed_build(input_dir: str, output_dir: str, count: int, config: ImageNetCConfig, workers: int) -> tuple:
    """:func:`_timed_build` in a fresh (spawned) driver process, its memory polled while it runs.

    Returns ``(exit code, driver pid, PeakMemory, (seconds, images, outputs, failures, cpu_seconds,
    image_work_cpu_seconds))``; the counts are None when the driver died before sending them."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    driver = context.Process(target=_timed_build, args=(sender, input_dir, output_dir, count, _pickled(config), workers))
    driver.start()
    sender.close()  # the driver holds the only sending end: recv() ends if it dies
    with PeakMemory(driver.pid) as memory:
        try:
            result = receiver.recv()
        except EOFError:
            result = (None,) * 6
        driver.join()
    return driver.exitcode, driver.pid, memory, result


def filesystem_type(path: str) -> Optional[str]:
    """Type of the file system ``path`` lies on (``'ext4'``, ``'tmpfs'``, ...), from ``/proc/mounts``:
    the longest mount point above it. None where ``/proc/mounts`` cannot be read."""
    path = os.path.realpath(path)
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            entries = [fields[1:3] for fields in map(str.split, mounts) if len(fields) >= 3]
    except OSError:
        return None
    above = [(len(point), kind) for point, kind in entries
             if path == point or path.startswith(point.rstrip("/") + "/")]
    return max(above)[1] if above else None


def measure_build(input_dir: str, count: int, config: ImageNetCConfig, workers: int, output_dir: str) -> dict:
    """One build of the first ``count`` images of ``input_dir`` into the new folder ``output_dir``,
    in a fresh driver process; the release is left in place (the caller removes it).

    Returns
    -------
    dict
        ``images``, ``workers``, ``outputs``, ``seconds`` (the build call, Beam start-up
        included), ``images_per_s``, ``cpu_seconds`` (driver and workers, see :func:`_timed_build`),
        ``image_work_cpu_seconds`` (the images' own work inside it), ``driver_peak_rss_mib``,
        ``worker_peak_rss_mib`` (one per worker process, in start order) and ``load_average``
        (1, 5, 15 minutes, just before).
    """
    load = os.getloadavg()
    exitcode, driver_pid, memory, (seconds, images, outputs, failures, cpu_seconds,
                                   work_seconds) = _run_timed_build(input_dir, output_dir, count, config, workers)
    if exitcode != 0 or failures or images != count:
        raise RuntimeError(f"scaling build of {count} images failed (exit {exitcode}, "
                           f"{images} images built, {failures} failures)")
    worker_peaks = [mib for pid, mib in sorted(memory.peaks.items()) if WORKER_MODULE in memory.commands[pid]]
    if len(worker_peaks) != workers:
        raise RuntimeError(f"saw {len(worker_peaks)} worker processes running {WORKER_MODULE}, expected {workers}")
    return {"images": images, "workers": workers, "outputs": outputs, "seconds": seconds,
            "images_per_s": images / seconds, "cpu_seconds": cpu_seconds, "image_work_cpu_seconds": work_seconds,
            "driver_peak_rss_mib": memory.peaks[driver_pid],
            "worker_peak_rss_mib": worker_peaks, "load_average": list(load)}


FULL_IMAGENET_C_OUTPUTS = 50_000 * 95
"""Outputs of the whole ImageNet-C release (50,000 validation images x 95 conditions)."""


def driver_memory_trend(runs: Sequence[dict], full_outputs: int = FULL_IMAGENET_C_OUTPUTS) -> Optional[dict]:
    """How the driver's peak grows with the outputs, from the smallest and the largest run of the
    largest worker count: KiB per output, the largest/smallest ratio, and the peak extrapolated
    linearly to ``full_outputs``. None with fewer than two sizes."""
    most = max(run["workers"] for run in runs)
    chosen = sorted((run for run in runs if run["workers"] == most), key=lambda run: run["outputs"])
    if len(chosen) < 2 or chosen[-1]["outputs"] == chosen[0]["outputs"]:
        return None
    low, high = chosen[0], chosen[-1]
    slope = (high["driver_peak_rss_mib"] - low["driver_peak_rss_mib"]) / (high["outputs"] - low["outputs"])
    return {"workers": most, "from_outputs": low["outputs"], "to_outputs": high["outputs"],
            "ratio": high["driver_peak_rss_mib"] / low["driver_peak_rss_mib"], "kib_per_output": slope * 1024,
            "full_outputs": full_outputs,
            "full_driver_peak_mib": high["driver_peak_rss_mib"] + slope * (full_outputs - high["outputs"])}


def bench_ms_per_image(config: ImageNetCConfig, images: int = len(BENCH_IMAGES), repeats: int = 3) -> float:
    """What ``imagenet-cp bench`` says one image of ``config`` costs, in CPU milliseconds.

    Decode + preprocess, then corrupt + JPEG encode of every condition of ``config`` (its
    corruptions x its severities, benchmark or not), on the bench photographs (:func:`run_bench`,
    CPU clock, ``config``'s random mode).
    """
    from pipelines.bench.corruptions import run_bench

    result = run_bench(config.corruptions, images=images, repeats=repeats, rng_modes=[config.rng], clock="cpu")
    wanted = [severity - 1 for severity in config.severities]
    return result["decode_ms"] + sum(timing["ms_by_severity"][s] + timing["encode_ms_by_severity"][s]
                                     for timing in result["corruptions"].values() for s in wanted)


def build_cost(runs: Sequence[dict], bench_ms: Optional[float]) -> Optional[dict]:
    """The build's CPU cost per image at the margin (between the smallest and the largest size of the
    largest worker count: Beam's fixed start-up cancels out) against the bench's per-image cost, and
    the largest build's whole CPU time per image (start-up, class folders and seal included) against
    it (``whole_build_over_bench``). None with fewer than two sizes.

    ``image_work_cpu_ms_per_image`` is the same margin of the images' own work as the builds' workers
    counted it (``image_work_cpu_seconds``: the bench's steps, timed inside the builds), and
    ``build_over_image_work`` the build's cost over it: the same ratio as ``build_over_bench``
    without the bench, so that the machine's drift between the bench and the builds does not enter it."""
    most = max(run["workers"] for run in runs)
    chosen = sorted((run for run in runs if run["workers"] == most), key=lambda run: run["images"])
    if len(chosen) < 2 or chosen[-1]["images"] == chosen[0]["images"]:
        return None
    low, high = chosen[0], chosen[-1]

    def margin_ms(field):
        return 1000.0 * (high[field] - low[field]) / (high["images"] - low["images"])

    marginal, work = margin_ms("cpu_seconds"), margin_ms("image_work_cpu_seconds")
    whole = 1000.0 * high["cpu_seconds"] / high["images"]
    return {"workers": most, "from_images": low["images"], "to_images": high["images"],
            "build_cpu_ms_per_image": marginal, "image_work_cpu_ms_per_image": work,
            "build_over_image_work": marginal / work if work > 0 else None, "bench_cpu_ms_per_image": bench_ms,
            "build_over_bench": marginal / bench_ms if bench_ms else None,
            "whole_build_cpu_ms_per_image": whole, "whole_build_over_bench": whole / bench_ms if bench_ms else None}


def _killed_build(input_dir: str, output_dir: str, count: int, config: ImageNetCConfig, workers: int,
                  fraction: float) -> float:
    """Start a build in a fresh driver process and SIGKILL it and its workers once ``fraction`` of
    its outputs are written (the progress files say so); return the seconds it ran."""
    from pipelines.beam.progress import read_progress
    from pipelines.beam.shutdown import worker_pids

    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    driver = context.Process(target=_timed_build, args=(sender, input_dir, output_dir, count, _pickled(config), workers))
    start = time.perf_counter()
    driver.start()
    sender.close()
    target = fraction * count * len(config.pairs)
    while driver.is_alive():
        if read_progress(output_dir).get("outputs_written", 0) >= target:
            for pid in [driver.pid, *worker_pids(driver.pid)]:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            break
        time.sleep(0.2)
    driver.join()
    if driver.exitcode == 0:
        raise RuntimeError(f"the build of {count} images ended before {fraction:.0%} of it could be killed")
    return time.perf_counter() - start


def measure_resume(input_dir: str, count: int, config: ImageNetCConfig, workers: int, fresh_seconds: float,
                   output_dir: str, fraction: float = 0.5) -> dict:
    """A build killed (SIGKILL of the driver and its workers) at ``fraction`` of its outputs, then
    rerun into the same new folder ``output_dir`` (left in place): the rerun's seconds against
    ``fresh_seconds`` (an uninterrupted build of the same images, measured before)."""
    killed_after = _killed_build(input_dir, output_dir, count, config, workers, fraction)
    exitcode, _, _, (seconds, images, _, failures, _, _) = _run_timed_build(input_dir, output_dir, count, config,
                                                                          workers)
    if exitcode != 0 or failures or images != count:
        raise RuntimeError(f"resumed build of {count} images failed (exit {exitcode})")
    return {"images": count, "workers": workers, "killed_at_fraction": fraction, "killed_after_seconds": killed_after,
            "fresh_seconds": fresh_seconds, "rerun_seconds": seconds, "rerun_ratio": seconds / fresh_seconds}


def run_scaling(sizes: Sequence[int] = SCALING_SIZES, workers: Sequence[int] = SCALING_WORKERS,
                config: ImageNetCConfig = ImageNetCConfig(), seed: int = 0, resume: bool = False,
                compare_bench: bool = True, format_floor: bool = True) -> dict:
    """Build the synthetic set at every size with every worker count.

    Parameters
    ----------
    sizes : sequence of int
        Image counts (>= 1); one synthetic set of the largest is written and each build reads
        its first ``size`` images in key order.
    workers : sequence of int
        Worker counts (>= 1); ``speedup`` is images per second relative to the first.
    config : ImageNetCConfig
        What each image is built into (default: all 19 corruptions x 5 severities).
    seed : int
        Seed of the synthetic set.
    resume : bool
        Also kill a build of the largest size (largest worker count) half way and time its
        rerun (:func:`measure_resume`).
    compare_bench : bool
        Also time the same conditions with the bench (:func:`bench_ms_per_image`), for
        ``build_cost``.
    format_floor : bool
        Also time what the release format itself costs per image on the smallest size, in one
        process (:func:`pipelines.bench.format_floor.measure_format_floor`).

    Returns
    -------
    dict
        JSON-ready: ``runs`` (one :func:`measure_build` dict per size and worker count, sizes
        outer, each with ``speedup``), ``driver_memory`` (:func:`driver_memory_trend`),
        ``resume`` (when asked), ``build_cost`` (:func:`build_cost`; None with one size),
        ``format_floor`` (when asked),
        ``conditions_per_image``, ``corruptions``, ``severities``,
        ``rng``, ``image_size``, ``memory`` (how it was measured), ``machine``, and
        ``scratch_filesystem`` (:func:`filesystem_type` of the folder the builds wrote to).
    """
    sizes, workers = list(sizes), list(workers)
    for name, values in (("sizes", sizes), ("workers", workers)):
        if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
            raise ValueError(f"{name} must be a non-empty list of ints >= 1, got {values!r}")
    scratch = tempfile.mkdtemp(prefix="imagenet-cp-scaling-")
    try:
        input_dir = write_synthetic_imagenet(os.path.join(scratch, "input"), max(sizes), seed)
        runs = []
        for size in sizes:
            base = None
            for count in workers:
                run = measure_build(input_dir, size, config, count, os.path.join(scratch, f"build-{size}-{count}"))
                base = base or run["images_per_s"]
                runs.append({**run, "speedup": run["images_per_s"] / base})
        resumed = None
        if resume:
            last = max((run for run in runs if run["images"] == max(sizes)), key=lambda run: run["workers"])
            resumed = measure_resume(input_dir, last["images"], config, last["workers"], last["seconds"],
                                     os.path.join(scratch, "resumed"))
        floor = measure_format_floor(input_dir, min(sizes), config, os.path.join(scratch, "floor")) \
            if format_floor else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    cost = build_cost(runs, bench_ms_per_image(config) if compare_bench and len(set(sizes)) > 1 else None)
    return {"runs": runs, "driver_memory": driver_memory_trend(runs), "resume": resumed, "build_cost": cost,
            "format_floor": floor,
            "scratch_filesystem": filesystem_type(os.path.dirname(scratch)),
            "conditions_per_image": len(config.pairs), "corruptions": list(config.corruptions),
            "severities": list(config.severities), "rng": config.rng, "image_size": list(SYNTHETIC_SIZE),
            "memory": f"peak RSS (VmHWM) of each process, polled every {POLL_SECONDS} s",
            "machine": machine_info()}


def format_scaling_table(result: dict) -> str:
    """The figures of :func:`run_scaling` as an aligned text table."""
    header = (f"{'images':>7}{'workers':>8}{'seconds':>9}{'images/s':>10}{'speedup':>9}{'CPU s':>9}"
              f"{'driver MiB':>12}{'worker MiB':>16}{'load 1 min':>12}")
    lines = [f"ImageNet-C build, {result['conditions_per_image']} conditions per image "
             f"({', '.join(result['corruptions'])} x severities {result['severities']}), rng {result['rng']}",
             header, "-" * len(header)]
    for run in result["runs"]:
        workers = "/".join(f"{mib:.0f}" for mib in run["worker_peak_rss_mib"])
        lines.append(f"{run['images']:>7}{run['workers']:>8}{run['seconds']:9.1f}{run['images_per_s']:10.2f}"
                     f"{run['speedup']:9.2f}{run['cpu_seconds']:9.1f}{run['driver_peak_rss_mib']:12.0f}{workers:>16}"
                     f"{run['load_average'][0]:12.2f}")
    machine = result["machine"]
    lines.append("-" * len(header))
    trend = result.get("driver_memory")
    if trend:
        lines.append(f"driver peak {trend['from_outputs']} -> {trend['to_outputs']} outputs: x{trend['ratio']:.2f}, "
                     f"{trend['kib_per_output']:.3f} KiB per output; extrapolated to {trend['full_outputs']:,} "
                     f"outputs: {trend['full_driver_peak_mib']:.0f} MiB")
    cost = result.get("build_cost")
    if cost:
        bench = cost["bench_cpu_ms_per_image"]
        lines.append(f"build cost at the margin ({cost['from_images']} -> {cost['to_images']} images, "
                     f"{cost['workers']} workers): {cost['build_cpu_ms_per_image']:.0f} CPU ms per image"
                     + (f"; the bench: {bench:.0f} CPU ms per image; build / bench {cost['build_over_bench']:.2f}"
                        if bench else ""))
        if cost["build_over_image_work"]:
            lines.append(f"the images' own work inside those builds: {cost['image_work_cpu_ms_per_image']:.0f} CPU ms "
                         f"per image; build / own work {cost['build_over_image_work']:.2f}")
        floor = result.get("format_floor")
        if floor:
            lines.append(f"the format's floor ({floor['images']} images in one process, no Beam, no parts: the records "
                         f"with the arrays' SHA-256, tree files with theirs, TFRecord examples): {floor['floor_cpu_ms_per_image']:.0f} "
                         f"CPU ms per image; floor / "
                         f"own work {floor['floor_over_own_work']:.3f} "
                         f"({floor['with_manifest_over_own_work']:.3f} with manifest lines)")
        if bench:
            lines.append(f"whole build of {cost['to_images']} images: {cost['whole_build_cpu_ms_per_image']:.0f} CPU ms "
                         f"per image; build / bench {cost['whole_build_over_bench']:.2f}")
    resumed = result.get("resume")
    if resumed:
        lines.append(f"resume: killed at {resumed['killed_at_fraction']:.0%} after {resumed['killed_after_seconds']:.1f} s;"
                     f" rerun {resumed['rerun_seconds']:.1f} s = {resumed['rerun_ratio']:.0%} of a fresh build "
                     f"({resumed['fresh_seconds']:.1f} s)")
    lines += [f"memory: {result['memory']}; builds written to a {result.get('scratch_filesystem') or 'unknown'} "
              f"file system (TMPDIR)",
              f"machine: {machine['cpu']}, {machine['usable_cores']}/{machine['cores']} cores usable, "
              f"Python {machine['python']}"]
    return "\n".join(lines)
