"""Release tools on a built folder: verify, package, the output folder's lock and resume state."""

__all__ = []
