"""Where a build runs: Beam's FnApiRunner in multi-process mode locally, any runner otherwise.

Without ``--runner`` in the Beam arguments the build uses the portable FnApiRunner with
``direct_running_mode='multi_processing'`` and one SDK worker process per core (the plain
DirectRunner may hand batch pipelines to the Prism runner, which downloads a binary first).
With ``--runner=DataflowRunner`` (or Flink, Spark, ``PortableRunner`` against any job server)
every argument goes to Beam unchanged, but for the job server that ``--runner=FlinkRunner`` finds
in Beam's jar cache (:func:`with_cached_job_server`); ``--setup_file ./setup.py`` makes the
workers install this package. Locally, the Beam arguments (file-system options such as ``--s3_endpoint_url`` among them)
reach the worker processes too.
"""
from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass
from typing import Optional, Sequence, TextIO

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, FlinkRunnerOptions, PipelineOptions, StandardOptions
from apache_beam.portability.api import beam_provision_api_pb2
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo
from google.protobuf import struct_pb2

from pipelines.beam.shutdown import STALL_SECONDS
from pipelines.formats.parts import PART_RECORDS, PART_SECONDS

__all__ = ["JAR_CACHE", "WORKER_LOG_LEVEL", "is_local", "make_pipeline", "RunOptions", "with_cached_job_server"]

WORKER_LOG_LEVEL = "WARNING"
"""Log level of local SDK worker processes (their INFO lines would drown the progress line)."""


@dataclass(frozen=True)
class RunOptions:
    """How a pipeline runs, the same for a build, an evaluation and a filter.

    Attributes
    ----------
    workers : int, optional
        Local worker processes (default: all cores); see :func:`make_pipeline`.
    beam_args : tuple of str
        Beam pipeline options (``--runner=DataflowRunner ...``), passed through.
    stream : text stream, optional
        Where progress lines and notes go; None: ``sys.stderr`` at the time of writing (:attr:`out`).
    force : bool
        Replace what the output folder holds of another config or input (a build), or discard the
        scratch folder of an interrupted run of something else (an evaluation), instead of refusing.
    progress_interval : float
        Seconds between progress lines (local runs).
    part_records, part_seconds : int, float
        When workers commit their work (see :class:`pipelines.formats.parts.PartWriter`).
    stall_seconds : float
        A build run elsewhere is stopped when no part was committed for this long (0: never); see
        :func:`pipelines.beam.shutdown.wait_watched`.
    verbose : bool
        An evaluation ends with a line of each step's seconds.
    started : float, optional
        When the command started (``time.time()``), the first step's start in that line.
    """

    workers: Optional[int] = None
    beam_args: Sequence[str] = ()
    stream: Optional[TextIO] = None
    force: bool = False
    progress_interval: float = 10.0
    part_records: int = PART_RECORDS
    part_seconds: float = PART_SECONDS
    stall_seconds: float = STALL_SECONDS
    verbose: bool = False
    started: Optional[float] = None

    def __post_init__(self):
        object.__setattr__(self, "beam_args", tuple(self.beam_args))

    @property
    def out(self) -> TextIO:
        """Where progress lines and notes go: :attr:`stream`, or ``sys.stderr`` now."""
        return self.stream or sys.stderr


def is_local(beam_args: Sequence[str]) -> bool:
    """True when the Beam arguments name no runner, so the build runs on this machine."""
    return PipelineOptions(list(beam_args)).view_as(StandardOptions).runner is None


JAR_CACHE = os.path.join("~", ".apache_beam", "cache", "jars")
"""Beam's jar cache, where ``make engines`` puts the job servers it builds."""


def with_cached_job_server(beam_args: Sequence[str], jar_cache: str = JAR_CACHE) -> tuple[str, ...]:
    """``beam_args``, with ``--flink_job_server_jar`` added for ``--runner=FlinkRunner`` when none is
    given and Beam's jar cache holds one Flink job server of the requested ``--flink_version``.

    Beam's FlinkRunner looks in the cache only for the job server of its own version; ``make
    engines`` builds the one that Maven Central serves whole (see engines/versions.sh), whose
    version differs. Any other runner, an explicit jar, or no single match: unchanged.
    """
    options = PipelineOptions(list(beam_args))
    runner = options.view_as(StandardOptions).runner or ""
    if runner.rsplit(".", 1)[-1] != "FlinkRunner" or any(a.startswith("--flink_job_server_jar") for a in beam_args):
        return tuple(beam_args)
    version = options.view_as(FlinkRunnerOptions).flink_version
    found = glob.glob(os.path.join(os.path.expanduser(jar_cache), f"beam-runners-flink-{version}-job-server-*.jar"))
    return (*beam_args, f"--flink_job_server_jar={found[0]}") if len(found) == 1 else tuple(beam_args)


def make_pipeline(workers: Optional[int] = None, beam_args: Sequence[str] = (),
                  in_threads: bool = False) -> beam.Pipeline:
    """A Beam pipeline for a build.

    Parameters
    ----------
    workers : int, optional
        Local worker processes (default: all cores). Ignored when ``beam_args`` name a runner:
        use that runner's own options (e.g. Dataflow's ``--max_num_workers``).
    beam_args : sequence of str
        Beam pipeline options, passed through unchanged.
    in_threads : bool
        Run the local workers as threads of this process (``multi_threading``) instead of worker
        processes: no worker start (a process importing Beam, 1-3 s) and no worker exit, for work
        whose time is spent where the GIL is released (an evaluation's decoding and model runs).
        A ``--direct_running_mode`` in ``beam_args`` overrides both choices.

    Raises
    ------
    ValueError
        If ``workers`` is given and < 1.
    """
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if not is_local(beam_args):
        return beam.Pipeline(options=PipelineOptions(list(with_cached_job_server(beam_args))))
    options = PipelineOptions(list(beam_args))
    direct = options.view_as(DirectOptions)
    if not any(arg.startswith("--direct_running_mode") for arg in beam_args):  # the user's choice stands
        direct.direct_running_mode = "multi_threading" if in_threads else "multi_processing"
    direct.direct_num_workers = workers or os.cpu_count() or 1
    return beam.Pipeline(runner=FnApiRunner(provision_info=_worker_provision_info(beam_args)), options=options)


def _worker_provision_info(beam_args: Sequence[str] = ()) -> ExtendedProvisionInfo:
    """What the local runner hands its worker processes: the Beam arguments given (the FnApiRunner
    passes them no pipeline options of its own) and their log level."""
    given = PipelineOptions(list(beam_args)).get_all_options(drop_default=True, retain_unknown_options=True)
    options = struct_pb2.Struct()
    options.update({name: value for name, value in given.items() if value is not None})
    options.update({"default_sdk_harness_log_level": WORKER_LOG_LEVEL})
    return ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(
        retrieval_token="unused-retrieval-token", pipeline_options=options))
