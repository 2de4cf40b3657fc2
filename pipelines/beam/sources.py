"""The Beam side of the inputs: read the listed entries' bytes on the workers.

The driver lists an input with :mod:`pipelines.inputs` (no Beam there); :class:`ReadImageNet`
turns the entry list files it wrote into ``SourceImage`` s on the workers.
"""
from __future__ import annotations

from typing import Optional, Sequence

import apache_beam as beam

from schemas.records import Failure, SourceEntry, SourceImage
from transforms import BadInput

from pipelines.beam.progress import ProgressCounter
from pipelines.formats.lists import read_entry_list
from pipelines.inputs.listing import os_reason, read_entry

__all__ = ["ReadImageNet"]


class _ReadImagesFn(beam.DoFn):
    """SourceEntry -> SourceImage (its bytes); entries that cannot be read (``OSError``) or hold no
    image (``BadInput``) go to the ``failures`` output."""

    def __init__(self, progress_dir: Optional[str]):
        self._progress_dir = progress_dir

    def setup(self):
        self._progress = ProgressCounter(self._progress_dir)

    def process(self, entry: SourceEntry):
        try:
            data = read_entry(entry)
        except (OSError, BadInput) as err:  # bad data; any other error is a bug and stops the build
            self._progress.add(failures=1)
            reason = os_reason(err) if isinstance(err, OSError) and err.errno is not None else str(err)
            yield beam.pvalue.TaggedOutput("failures", Failure(entry.key, entry.source, "read", f"cannot read: {reason}"))
            return
        self._progress.add(images_read=1)
        yield SourceImage(entry, data)

    def finish_bundle(self):
        self._progress.flush()  # a read stage can end long before the workers are torn down

    def teardown(self):
        self._progress.flush()


class ReadImageNet(beam.PTransform):
    """Entry list files -> ``images`` (SourceImage) and ``failures``: the files are spread over the
    workers, each reads the entries of its files.
    ``progress_dir``: where workers leave progress counts (see :class:`ProgressCounter`)."""

    def __init__(self, entry_lists: Sequence[str], progress_dir: Optional[str] = None):
        super().__init__()
        self._entry_lists = list(entry_lists)
        self._progress_dir = progress_dir

    def expand(self, pbegin):
        return (pbegin
                | "EntryLists" >> beam.Create(self._entry_lists)
                | "Spread" >> beam.Reshuffle()  # the files, not their entries (listing.ENTRIES_PER_LIST)
                | "ListedImages" >> beam.FlatMap(read_entry_list)
                | "ReadBytes" >> beam.ParDo(_ReadImagesFn(self._progress_dir)).with_outputs("failures", main="images"))
