"""Beam composites and the release writers: the only room with side effects."""

__all__ = []
