"""Benchmarks (``imagenet-cp bench``) and the preview contact sheet."""

__all__ = []
