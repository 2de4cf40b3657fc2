"""The full-size run: every step a maintainer runs on a whole release, timed at several sizes.

A :class:`FullSizePlan` names what is built: the benchmark (ImageNet-C or ImageNet-P), the edition
and the configs (the ten of :data:`FULL_SIZE_CORRUPTIONS` at :data:`FULL_SIZE_SEVERITY` with the
clean config, or every config of the edition). :func:`run_full_size` makes the plan's input, or
takes a real one: for the ImageNet editions a folder in the layout of ImageNet's validation set
(:func:`write_validation_like`: ``<wnid>/ILSVRC2012_val_<n>.JPEG`` under the ground truth's class of
``n``, sizes and modes drawn from :data:`INPUT_KINDS`), for CIFAR a CIFAR-10 test set in the
``cifar-10-batches-py`` pickle layout (:func:`write_cifar_like`). For each size it runs the
commands a maintainer runs, each as its own ``imagenet-cp`` process:

1. ``build-c`` or ``build-p`` of the plan's configs, SIGKILLed with its workers once
   :data:`KILL_FRACTION` of its outputs are committed, then run again to the end (the resume);
2. ``verify``, ``package`` and ``publish`` of that release;
3. ``evaluate`` of the plan's first configs (when a model is given), killed the same way once,
   then run again to the end.

For each step it reports the wall time, the CPU time (the process and every descendant: the run
adopts orphans as a child subreaper, so a killed driver's workers are counted too), the peak
resident set of the driver and of the largest worker, the bytes the step added to the folders it
writes, and the cost per output. The cost per output at each size against the smallest shows
whether a step grows faster than its work; :func:`projection` extrapolates the per-output CPU to the
plan's whole release (every config of the edition, its whole input) on a number of cores.

Linux only (``/proc``, ``prctl``). A script calling :func:`run_full_size` needs no guard: every step
is a new process started with ``subprocess``.
"""
from __future__ import annotations

import ctypes
import hashlib
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
from PIL import Image

from schemas.imagenet_val import validation_wnids

from pipelines.bench.corruptions import machine_info
from pipelines.bench.full_size_plan import (CONFIG_CHOICES, EVALUATED_CONFIGS, FULL_SIZE_CORRUPTIONS,
                                            FULL_SIZE_PERTURBATIONS, FULL_SIZE_SEVERITY, WHOLE_INPUT_IMAGES,
                                            FullSizePlan)
from pipelines.bench.scaling import WORKER_MODULE, PeakMemory, bench_photo, filesystem_type, photo_crop
from pipelines.formats.parts import CommittedRecords
from pipelines.inputs.families import CIFAR10_ROOT, write_cifar10

__all__ = ["FULL_SIZE_SIZES", "FULL_SIZE_CORRUPTIONS", "FULL_SIZE_SEVERITY", "FULL_SIZE_PERTURBATIONS",
           "EVALUATED_CONFIGS", "KILL_FRACTION", "RESUME_KILL_FRACTION", "CONFIG_CHOICES", "WHOLE_INPUT_IMAGES",
           "FullSizePlan", "InputKind", "INPUT_KINDS", "JPEG_QUALITY", "input_kind", "validation_like_image",
           "write_validation_like", "CIFAR_SIDE", "cifar_like_image", "write_cifar_like", "folder_bytes",
           "committed_records", "cli_command", "run_step", "combined", "killed_and_rerun", "release_digest",
           "measure_size", "projection", "write_input", "run_full_size", "format_full_size_table"]

FULL_SIZE_SIZES = (5_000, 20_000, 50_000)
"""Image counts of a full-size run: the last is the whole validation set."""

KILL_FRACTION = 0.5
"""Share of a step's outputs committed when it is killed."""

RESUME_KILL_FRACTION = 2 / 3
"""Share committed when the build at the smallest size is killed, whose rerun is compared with an
uninterrupted build: the rerun should cost about the third that no part committed."""

@dataclass(frozen=True)
class InputKind:
    """One kind of validation image: its share of the set, size, mode and file format.

    Attributes
    ----------
    share : float
        Fraction of the set, in (0, 1]; the shares of :data:`INPUT_KINDS` add up to 1.
    width, height : int
        Pixels.
    mode : str
        Pillow mode of the saved file (``RGB``, ``L``, ``CMYK``).
    format : str
        Pillow format the bytes are saved in; the name ends in ``.JPEG`` whatever it is.
    """

    share: float
    width: int
    height: int
    mode: str
    format: str


INPUT_KINDS = (
    InputKind(0.57, 500, 375, "RGB", "JPEG"),
    InputKind(0.20, 375, 500, "RGB", "JPEG"),
    InputKind(0.15, 500, 333, "RGB", "JPEG"),
    InputKind(0.04, 333, 500, "RGB", "JPEG"),
    InputKind(0.02, 2048, 1536, "RGB", "JPEG"),  # the tail past 2,000 pixels
    InputKind(0.015, 500, 375, "L", "JPEG"),
    InputKind(0.004, 500, 375, "CMYK", "JPEG"),
    InputKind(0.001, 500, 375, "RGB", "PNG"),  # a PNG saved under a .JPEG name, as one validation file is
)
"""The sizes, modes and formats of the synthetic validation set, by share (ImageNet's validation
files are mostly 500x375 and 375x500 JPEGs, with a tail of large ones, a few greyscale and CMYK
JPEGs, and a PNG with a JPEG name)."""

JPEG_QUALITY = 90
"""Quality of the synthetic JPEGs."""


def input_kind(index: int, seed: int = 0) -> InputKind:
    """The :class:`InputKind` of synthetic validation image ``index`` (>= 1) of set ``seed``."""
    draw = np.random.default_rng([seed, index, 1]).random()
    edges = np.cumsum([kind.share for kind in INPUT_KINDS])
    return INPUT_KINDS[min(int(np.searchsorted(edges, draw, side="right")), len(INPUT_KINDS) - 1)]


def validation_like_image(index: int, seed: int = 0) -> bytes:
    """The file bytes of synthetic validation image ``index`` (>= 1): a random crop of a bench
    photograph, flipped half of the time, at its kind's size, mode and format (:func:`input_kind`)."""
    kind = input_kind(index, seed)
    rng = np.random.default_rng([seed, index])
    image = photo_crop(rng, bench_photo(rng), kind.width, kind.height)
    buffer = io.BytesIO()
    options = {"quality": JPEG_QUALITY} if kind.format == "JPEG" else {}
    image.convert(kind.mode).save(buffer, format=kind.format, **options)
    return buffer.getvalue()


def _write_images(folder: str, indices: Sequence[int], seed: int) -> int:
    written = 0
    for index in indices:
        path = os.path.join(folder, validation_wnids()[index - 1], f"ILSVRC2012_val_{index:08d}.JPEG")
        with open(path, "wb") as stream:
            written += stream.write(validation_like_image(index, seed))
    return written


def write_validation_like(folder: str, count: int, seed: int = 0, workers: int = 1) -> int:
    """Write validation images 1..``count`` as ``folder/<wnid>/ILSVRC2012_val_<n>.JPEG`` (the ground
    truth's class of ``n``; the first 50,000 fill the 1,000 classes with 50 each) with ``workers``
    processes; return the bytes written."""
    wnids = validation_wnids()
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= len(wnids):
        raise ValueError(f"count must be an int in 1..{len(wnids)}, got {count!r}")
    for wnid in set(wnids[:count]):
        os.makedirs(os.path.join(folder, wnid), exist_ok=True)
    indices = list(range(1, count + 1))
    chunks = [indices[start::workers] for start in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        return sum(pool.map(_write_images, [folder] * workers, chunks, [seed] * workers))


CIFAR_SIDE = 32
"""Side of a CIFAR image, pixels."""


def cifar_like_image(index: int, seed: int = 0) -> tuple[np.ndarray, int]:
    """Synthetic CIFAR test image ``index`` (>= 0) of set ``seed`` and its class in 0..9: a random
    crop of a bench photograph at 96x96, flipped half of the time, BOX-downsampled to 32x32 as
    CIFAR's images were; uint8 (32, 32, 3)."""
    rng = np.random.default_rng([seed, index, 2])
    crop = photo_crop(rng, bench_photo(rng), 3 * CIFAR_SIDE, 3 * CIFAR_SIDE)
    return np.asarray(crop.resize((CIFAR_SIDE, CIFAR_SIDE), Image.BOX)), int(rng.integers(10))


def write_cifar_like(folder: str, count: int, seed: int = 0) -> int:
    """Write a CIFAR-10 test set of :func:`cifar_like_image` 0..``count`` - 1 as
    ``folder/cifar-10-batches-py/{test_batch,batches.meta}`` (the official pickle layout); return the
    bytes written."""
    whole = WHOLE_INPUT_IMAGES["cifar10"]
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= whole:
        raise ValueError(f"count must be an int in 1..{whole}, got {count!r}")
    drawn = [cifar_like_image(index, seed) for index in range(count)]
    root = write_cifar10(folder, np.stack([image for image, _ in drawn]), [label for _, label in drawn],
                         [f"synthetic_{index:05d}.png" for index in range(count)],
                         f"testing batch 1 of 1 (imagenet-cp full-size run, seed {seed})")
    return folder_bytes(root)


def _adopt_orphans(adopt: bool = True) -> None:
    """Make this process the child subreaper of its descendants (``PR_SET_CHILD_SUBREAPER``), so
    that the workers of a killed driver are reparented here and their CPU time reaches
    ``RUSAGE_CHILDREN`` when they are reaped; ``adopt=False`` ends it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, int(adopt), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _reap(pids: Iterable[int], timeout: float = 60.0) -> None:
    """Wait for each of ``pids`` that became this process's child (a killed driver's workers,
    adopted) to end; a pid that is not a child (its own parent reaped it) is passed over."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    break
            except ChildProcessError:
                break
            time.sleep(0.05)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def folder_bytes(*folders: str) -> int:
    """Bytes of the files under ``folders`` (missing ones count 0)."""
    total = 0
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in files:
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    continue
    return total


def committed_records(scratch: str) -> Callable[[], int]:
    """A counter of the records the committed parts of the build (outputs and source records) or
    of the evaluation (predictions) in ``scratch`` hold; each call reads only the ledger entries
    committed since the last (reading the whole ledger each time cost 0.3 CPU s at 2,500 parts,
    which polled every 0.2 s took a core from the build it watched)."""
    counter = CommittedRecords(scratch)

    def count() -> int:
        try:
            return counter()
        except (OSError, ValueError):
            return 0
    return count


def cli_command(*args: str) -> list[str]:
    """The command line of ``imagenet-cp ARGS`` with this interpreter."""
    return [sys.executable, "-c", "import sys; from scripts.cli import main; sys.exit(main())", *args]


def run_step(name: str, args: Sequence[str], writes: Sequence[str], outputs: int,
             kill_when: Optional[Callable[[], bool]] = None, log: Optional[str] = None) -> dict:
    """Run ``imagenet-cp ARGS`` as a new process session and measure it.

    Parameters
    ----------
    name : str
        The step's name in the table.
    args : sequence of str
        The sub-command and its arguments.
    writes : sequence of str
        The folders the step writes (their growth is ``disk_written_bytes``).
    outputs : int
        What the step handles (outputs, files or predictions), for the per-output figures.
    kill_when : callable, optional
        Polled while the step runs; once true the step's whole process group is SIGKILLed.
    log : str, optional
        File the step's standard output and error go to (default: discarded).

    Returns
    -------
    dict
        ``step``, ``exit_code``, ``killed``, ``seconds``, ``cpu_seconds``, ``driver_peak_rss_mib``,
        ``worker_peak_rss_mib`` (the largest Beam worker, None without workers), ``disk_written_bytes``,
        ``outputs``, ``cpu_ms_per_output``, ``wall_ms_per_output``.
    """
    before, cpu_before = folder_bytes(*writes), _children_cpu()
    sink = open(log, "ab") if log else subprocess.DEVNULL
    start = time.perf_counter()
    try:
        process = subprocess.Popen(cli_command(*args), stdout=sink, stderr=sink, start_new_session=True)
        killed = False
        with PeakMemory(process.pid) as memory:
            while process.poll() is None:
                if kill_when is not None and not killed and kill_when():
                    os.killpg(process.pid, signal.SIGKILL)
                    killed = True
                time.sleep(0.2)
        _reap(sorted(set(memory.peaks) - {process.pid}))  # the step's descendants, never other children
    finally:
        if log:
            sink.close()
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu_before
    workers = [mib for pid, mib in memory.peaks.items() if WORKER_MODULE in memory.commands.get(pid, ())]
    return {"step": name, "exit_code": process.returncode, "killed": killed, "seconds": seconds, "cpu_seconds": cpu,
            "driver_peak_rss_mib": memory.peaks.get(process.pid), "worker_peak_rss_mib": max(workers, default=None),
            "disk_written_bytes": folder_bytes(*writes) - before, "outputs": outputs,
            "cpu_ms_per_output": 1000 * cpu / outputs, "wall_ms_per_output": 1000 * seconds / outputs}


def combined(name: str, steps: Sequence[dict]) -> dict:
    """One step's figures from ``steps`` run one after the other on the same outputs (a killed run
    and its rerun): times and bytes added, peaks the largest."""
    seconds, cpu = sum(s["seconds"] for s in steps), sum(s["cpu_seconds"] for s in steps)
    outputs, workers = steps[0]["outputs"], [s["worker_peak_rss_mib"] for s in steps if s["worker_peak_rss_mib"]]
    return {"step": name, "exit_code": steps[-1]["exit_code"], "killed": False, "seconds": seconds,
            "cpu_seconds": cpu, "driver_peak_rss_mib": max(s["driver_peak_rss_mib"] for s in steps),
            "worker_peak_rss_mib": max(workers, default=None),
            "disk_written_bytes": sum(s["disk_written_bytes"] for s in steps), "outputs": outputs,
            "cpu_ms_per_output": 1000 * cpu / outputs, "wall_ms_per_output": 1000 * seconds / outputs}


def killed_and_rerun(name: str, args: Sequence[str], folder: str, parts: str, counts: tuple[int, int],
                     log: str, fraction: float = KILL_FRACTION) -> list[dict]:
    """Run ``imagenet-cp ARGS`` writing ``folder``, SIGKILL it once ``fraction`` of the records its
    parts commit (in ``parts``) are committed, run it again to the end, and return the killed step
    (with its ``committed_fraction``), the rerun and the two as one step.
    ``counts``: the outputs (for the per-output figures) and the records the parts commit in all."""
    outputs, records = counts
    committed = committed_records(parts)
    killed = _checked(run_step(f"{name} (killed)", args, [folder], outputs,
                               lambda: committed() >= fraction * records, log), log, killed=True)
    killed["committed_fraction"] = committed() / records
    rerun = _checked(run_step(f"{name} (rerun)", args, [folder], outputs, log=log), log)
    return [killed, rerun, combined(f"{name} (killed + rerun)", [killed, rerun])]


def _checked(step: dict, log: str, killed: bool = False) -> dict:
    if killed != step["killed"] or (not killed and step["exit_code"] != 0):
        what = "was not killed (it ended first)" if killed else f"failed (exit {step['exit_code']})"
        raise RuntimeError(f"full-size step {step['step']} {what}; its output is in {log}")
    return step


def release_digest(release: str) -> str:
    """The release digest: the SHA-256 of its ``SHA256SUMS``."""
    with open(os.path.join(release, "SHA256SUMS"), "rb") as sums:
        return hashlib.sha256(sums.read()).hexdigest()


def measure_size(plan: FullSizePlan, input_dir: str, count: int, scratch: str, workers: int,
                 model: Optional[str], uninterrupted: bool = False) -> list[dict]:
    """Every step of ``plan`` at ``count`` images (the first ``count`` of ``input_dir`` in key order)
    into ``scratch``; the release is left there. With ``uninterrupted``, an uninterrupted build of the
    same images comes first (step ``build-c`` or ``build-p``), and the rerun's step says whether its
    release digest is the uninterrupted one's (``same_digest``) and its time over the uninterrupted
    build's (``over_uninterrupted``)."""
    release, log = os.path.join(scratch, f"release-{count}"), os.path.join(scratch, f"steps-{count}.log")
    outputs = count * len(plan.groups)
    records = outputs + count  # what the build's parts commit: the outputs and a source record per image

    def build(output: str) -> list[str]:
        return [plan.command, "--input", input_dir, "--output", output, "--limit", str(count), "--workers",
                str(workers), *plan.build_args()]

    steps = []
    if uninterrupted:
        whole = os.path.join(scratch, f"uninterrupted-{count}")
        steps.append(_checked(run_step(plan.command, build(whole), [whole], outputs, log=log), log))
    steps += killed_and_rerun(plan.command, build(release), release, release, (outputs, records), log,
                              RESUME_KILL_FRACTION if uninterrupted else KILL_FRACTION)
    if uninterrupted:
        rerun = steps[-2]  # before the killed + rerun row
        rerun.update(same_digest=release_digest(release) == release_digest(whole),
                     over_uninterrupted=rerun["seconds"] / steps[0]["seconds"],
                     cpu_over_uninterrupted=rerun["cpu_seconds"] / steps[0]["cpu_seconds"])
        shutil.rmtree(whole)
    steps.append(_checked(run_step("verify", ["verify", release], [], outputs, log=log), log))
    packages = os.path.join(scratch, f"packages-{count}")
    steps.append(_checked(run_step("package", ["package", release, "--output", packages], [packages], outputs,
                                   log=log), log))
    steps.append(_checked(run_step("publish", ["publish", release], [release], outputs, log=log), log))
    if model:
        evaluation = os.path.join(scratch, f"evaluation-{count}")
        configs = plan.groups[:plan.evaluated]
        predictions = count * len(configs)
        evaluate = ["evaluate", "--release", release, "--model", model, "--output", evaluation,
                    "--workers", str(workers), "--configs", ",".join(configs)]
        steps += killed_and_rerun("evaluate", evaluate, evaluation, os.path.join(evaluation, ".evaluation"),
                                  (predictions, count * plan.evaluated_records()), log)
    return [dict(step, images=count) for step in steps]


def projection(steps: Sequence[dict], whole: tuple[int, int], cores: Sequence[int] = (2, 16, 64)) -> dict:
    """Hours of a whole release of ``whole`` (images, configs) per step on each number of cores, from
    each step's CPU per output at the largest size (CPU-bound: perfect scaling)."""
    largest = max(step["images"] for step in steps)
    full_outputs = whole[0] * whole[1]
    return {step["step"]: {str(n): step["cpu_ms_per_output"] * full_outputs / 1000 / 3600 / n for n in cores}
            for step in steps if step["images"] == largest and not step["step"].endswith(("(killed)", "(rerun)"))}


def write_input(plan: FullSizePlan, folder: str, count: int, seed: int, workers: int) -> tuple[str, int]:
    """Write the synthetic input of ``plan`` with ``count`` images under ``folder``: an ImageNet
    validation folder (:func:`write_validation_like`) or a CIFAR-10 test set
    (:func:`write_cifar_like`); return the path a build reads and the bytes written."""
    if plan.family == "imagenet":
        return folder, write_validation_like(folder, count, seed, workers)
    if plan.family == "cifar10":
        return os.path.join(folder, CIFAR10_ROOT), write_cifar_like(folder, count, seed)
    raise ValueError(f"no synthetic input for edition {plan.edition} (source {plan.family}): give --input")


def run_full_size(sizes: Sequence[int] = FULL_SIZE_SIZES, input_dir: Optional[str] = None, workers: int = 2,
                  model: Optional[str] = None, scratch: Optional[str] = None, seed: int = 0, keep: bool = False,
                  plan: FullSizePlan = FullSizePlan()) -> dict:
    """Run every step at every size (see the module's description).

    Parameters
    ----------
    sizes : sequence of int
        Image counts, each >= 1 and at most the whole input of the plan's family
        (:data:`WHOLE_INPUT_IMAGES`); the synthetic input holds the largest.
    input_dir : str, optional
        A real input of the plan's edition: an ImageNet validation folder or tar, a CIFAR folder
        (default: a synthetic one, :func:`write_input`).
    workers : int
        Worker processes of every build and evaluation.
    model : str, optional
        An ONNX classifier of the edition's input size (``imagenet-cp fetch-model
        efficientnet-lite0``); without it ``evaluate`` is not run.
    scratch : str, optional
        Where the input, the releases and the logs go (default: a new folder under ``TMPDIR``).
    seed : int
        Seed of the synthetic input.
    keep : bool
        Keep the scratch folder (default: removed at the end, unless a step failed).
    plan : FullSizePlan
        The benchmark, edition and configs (default: ImageNet-C at 224, the ten configs).

    Returns
    -------
    dict
        JSON-ready: ``steps`` (one :func:`run_step` dict per step and size, with ``images``),
        ``growth`` (each step's CPU and wall per output and its driver's peak at each size over the
        smallest size's), ``projection`` (:func:`projection`), ``whole`` (images and configs of the
        whole release), ``input`` (``synthetic`` or the path, its bytes and seconds to write),
        ``benchmark``, ``edition``, ``configs``, ``workers``, ``scratch_filesystem`` and ``machine``.
    """
    sizes = sorted(set(sizes))
    whole = plan.whole
    if not sizes or any(isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= whole[0] for s in sizes):
        raise ValueError(f"sizes must be ints in 1..{whole[0]} (the whole input of edition {plan.edition}), "
                         f"got {list(sizes)!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    if model and not os.path.isfile(model):
        raise ValueError(f"no model file {model}")
    _adopt_orphans()
    scratch = scratch or tempfile.mkdtemp(prefix="imagenet-cp-full-size-")
    os.makedirs(scratch, exist_ok=True)  # a --scratch not made yet, with an --input (no input written there)
    finished = False
    try:  # adopted for the run only: a caller (a test session) keeps its own process as it was
        start = time.perf_counter()
        if input_dir is None:
            input_dir, written = write_input(plan, os.path.join(scratch, "input"), max(sizes), seed, workers)
            source = {"input": "synthetic", "bytes": written, "seconds": time.perf_counter() - start}
        else:
            source = {"input": input_dir}
        steps = []
        for size in sizes:  # each size's figures are kept in scratch/steps.jsonl as soon as it is done
            steps += measure_size(plan, input_dir, size, scratch, workers, model, uninterrupted=size == sizes[0])
            with open(os.path.join(scratch, "steps.jsonl"), "a", encoding="utf-8") as done:
                done.writelines(json.dumps(step) + "\n" for step in steps if step["images"] == size)
        filesystem = filesystem_type(scratch)
        finished = True
    finally:  # a failed step's release and log are kept for a look
        _adopt_orphans(False)
        if finished and not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    smallest = {step["step"]: step for step in steps if step["images"] == sizes[0]}  # every step runs there
    growth = [{"step": step["step"], "images": step["images"],
               "cpu_per_output_over_smallest": step["cpu_ms_per_output"] / smallest[step["step"]]["cpu_ms_per_output"],
               "wall_per_output_over_smallest":
                   step["wall_ms_per_output"] / smallest[step["step"]]["wall_ms_per_output"],
               "driver_peak_over_smallest":
                   step["driver_peak_rss_mib"] / smallest[step["step"]]["driver_peak_rss_mib"]}
              for step in steps]
    return {"steps": steps, "growth": growth, "projection": projection(steps, whole), "whole": list(whole),
            "input": source, "benchmark": plan.benchmark, "edition": plan.edition, "configs": list(plan.groups),
            "workers": workers, "scratch": scratch if keep else None, "scratch_filesystem": filesystem,
            "machine": machine_info()}


def format_full_size_table(result: dict) -> str:
    """The figures of :func:`run_full_size` as an aligned text table."""
    header = (f"{'step':<24} {'images':>7} {'wall s':>9} {'CPU s':>9} {'CPU ms/out':>10} {'x smallest':>10} "
              f"{'driver MiB':>10} {'x smallest':>10} {'worker MiB':>10} {'written MB':>10}")
    configs = result["configs"]
    shown = ", ".join(configs) if len(configs) <= 12 else f"{', '.join(configs[:3])}, ..., {configs[-1]}"
    lines = [f"full-size run: build-{result['benchmark']} of edition {result['edition']}, {len(configs)} configs "
             f"({shown}), {result['workers']} workers, on {result['scratch_filesystem']}", header, "-" * len(header)]
    for step, growth in zip(result["steps"], result["growth"]):
        worker = "-" if step["worker_peak_rss_mib"] is None else f"{step['worker_peak_rss_mib']:.0f}"
        lines.append(f"{step['step']:<24} {step['images']:>7} {step['seconds']:>9.1f} {step['cpu_seconds']:>9.1f} "
                     f"{step['cpu_ms_per_output']:>10.2f} {growth['cpu_per_output_over_smallest']:>10.2f} "
                     f"{step['driver_peak_rss_mib']:>10.0f} {growth['driver_peak_over_smallest']:>10.2f} "
                     f"{worker:>10} {step['disk_written_bytes'] / 1e6:>10.1f}")
    for step in result["steps"]:
        if "same_digest" in step:
            killed = next(s for s in result["steps"] if s["step"] == f"build-{result['benchmark']} (killed)"
                          and s["images"] == step["images"])
            lines.append(f"at {step['images']} images, killed with {killed['committed_fraction']:.0%} of its records "
                         f"committed, the rerun took {step['over_uninterrupted']:.2f} of the uninterrupted build's "
                         f"wall time and {step['cpu_over_uninterrupted']:.2f} of its CPU; release digest "
                         f"{'the same' if step['same_digest'] else 'DIFFERENT'}")
    images, configs = result["whole"]
    lines.append(f"projected hours of a whole release ({images:,} images x {configs} configs), CPU-bound, by cores:")
    for name, hours in result["projection"].items():
        lines.append(f"  {name:<24} " + "  ".join(f"{cores} cores {h:8.2f}" for cores, h in hours.items()))
    return "\n".join(lines)
