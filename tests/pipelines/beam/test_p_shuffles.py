"""What crosses the shuffles of PerturbImages: a local runner holds all of it in the driver's memory,
so it must be one small element per image, never the image's bytes nor one element per video."""
import pickle

import apache_beam as beam
from apache_beam.pipeline import PipelineVisitor
from apache_beam.testing.util import assert_that, equal_to

from schemas.configs import ImageNetPConfig
from schemas.records import Locator, SourceEntry, SourceImage
from pipelines.beam.imagenet_p import PerturbImages
from pipelines.beam.runner import make_pipeline


class _Shuffles(PipelineVisitor):
    """The input PCollection of each shuffle under ``prefix``: a Reshuffle, or a GroupByKey outside
    one; ``found`` maps its label to ``(pcoll, grouped)`` (grouped: the elements are key-value pairs)."""

    def __init__(self, prefix: str):
        self.prefix, self.found = prefix, {}

    def enter_composite_transform(self, node):
        self.visit_transform(node)

    def visit_transform(self, node):
        label = node.full_label
        if not label.startswith(self.prefix) or any(label.startswith(f"{seen}/") for seen in self.found):
            return
        if isinstance(node.transform, (beam.Reshuffle, beam.GroupByKey)):
            self.found[label] = (node.inputs[0], isinstance(node.transform, beam.GroupByKey))


def _describe(element, grouped: bool) -> tuple:
    """The type of what a shuffle carries for ``element`` and whether it pickles small (no image bytes)."""
    value = element[1] if grouped else element
    return type(value).__name__, len(pickle.dumps(value)) < 1000


def test_one_small_entry_per_image_crosses_the_shuffles(sample_folder):
    paths = sorted(sample_folder.glob("*/*.JPEG"))[:2]
    images = [SourceImage(SourceEntry(f"{p.parent.name}/{p.name}", p.parent.name, 0, Locator(str(p)),
                                      f"{p.parent.name}/{p.name}"), p.read_bytes()) for p in paths]
    config = ImageNetPConfig.select(["gaussian_noise"], [1, 2], preset="ultrafast")  # two videos per image
    pipeline = make_pipeline(1, in_threads=True)
    outputs = pipeline | beam.Create(images) | "Perturb" >> PerturbImages(config)
    shuffles = _Shuffles("Perturb/")
    pipeline.visit(shuffles)
    assert shuffles.found
    for i, (label, (pcoll, grouped)) in enumerate(sorted(shuffles.found.items())):
        crossing = pcoll | f"What{i}" >> beam.Map(_describe, grouped) | f"Count{i}" >> beam.combiners.Count.PerElement()
        assert_that(crossing, equal_to([(("SourceEntry", True), len(images))]), label=f"Check{i}")
    assert_that(outputs.records | beam.Map(lambda r: r.key), equal_to(
        [f"{g}/{i.entry.wnid}/{p.stem}.mp4" for g in ("gaussian_noise", "gaussian_noise_2")
         for i, p in zip(images, paths)]), label="Videos")
    pipeline.run().wait_until_finish()
