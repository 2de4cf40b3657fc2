"""OpenCV's threads: one per process, for processes that run one per core.

A local build starts one SDK worker process per core (other runners too, by default), so
OpenCV's own pool of one thread per core only competes with the other workers, and the work it
hands to its helper threads escapes the build's count of each image's own work (the CPU time of
the worker's thread). Every output is the same whatever the number of threads: OpenCV's
parallel loops split the rows of an image, and the tests compare both.
"""
from __future__ import annotations

import cv2

__all__ = ["one_opencv_thread"]


def one_opencv_thread() -> None:
    """Make OpenCV run its functions on the calling thread alone, in this process.

    Build workers call it in their ``setup``, and ``imagenet-cp bench`` before it times anything,
    so that both measure the same work. Only speed changes.

    Examples
    --------
    >>> import cv2
    >>> from transforms.threads import one_opencv_thread
    >>> one_opencv_thread()
    >>> cv2.getNumThreads()
    1
    """
    cv2.setNumThreads(1)
