"""The release digest line the build commands, ``verify``, ``package`` and ``publish`` print last."""
from __future__ import annotations

__all__ = ["print_release_digest", "BUILT", "finish_build"]


def print_release_digest(release_dir: str) -> None:
    """Print ``release digest (sha256 of SHA256SUMS): <hex>`` when ``release_dir`` holds a ``SHA256SUMS``."""
    from pipelines.release.publish import digest_line

    line = digest_line(release_dir)
    if line is not None:
        print(line)


BUILT = (0, 1)
"""Exit codes of ``run_build`` after which the release is written (1: some inputs failed, listed)."""


def finish_build(release_dir: str, code: int) -> int:
    """The end of every build command: the release digest as the last line of a written release."""
    if code in BUILT:
        print_release_digest(release_dir)
    return code
