"""Encoders and file formats the graphs use: TFRecord framing, H.264 video, spill and part files, storage."""

__all__ = []
