"""OpenCV's thread count changes no output: a build's workers run it on one thread
(`transforms.threads.one_opencv_thread`), where OpenCV's default is one thread per core."""
import cv2
import numpy as np
import pytest
from skimage import data

from transforms import CORRUPTIONS, corrupt, example_rng, perturb_sequence, preprocess, preprocess_uncropped
from transforms.threads import one_opencv_thread


@pytest.fixture
def restore_threads():
    threads = cv2.getNumThreads()
    yield
    cv2.setNumThreads(threads)


def _outputs(photo: np.ndarray) -> list:
    crop, full = preprocess(photo), preprocess_uncropped(photo)
    outputs = [corrupt(crop, name, severity, example_rng(0, "k", name, severity))
               for name in CORRUPTIONS for severity in (1, 5)]
    outputs += [perturb_sequence(full, name, example_rng(0, "k", name, 1)) for name in ("rotate", "tilt", "spatter")]
    return outputs


def test_one_opencv_thread_changes_no_output(restore_threads):
    photo = data.chelsea()
    cv2.setNumThreads(4)  # a pool of helper threads, whatever this machine's cores
    assert cv2.getNumThreads() == 4
    many = _outputs(photo)
    one_opencv_thread()
    assert cv2.getNumThreads() == 1
    for index, (a, b) in enumerate(zip(many, _outputs(photo))):
        assert a.dtype == b.dtype and np.array_equal(a, b), index
