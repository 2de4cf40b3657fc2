"""Evaluation apart from its Beam graph: metric files, the report, review sheets, VCR human data."""

__all__ = []
