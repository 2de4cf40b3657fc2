"""The ``imagenet-cp`` command line: argument parsing and printing only."""

__all__ = []
