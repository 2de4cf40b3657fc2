"""Beam graphs: composite PTransforms, their private DoFns, the sinks, and the driver that runs a build."""

__all__ = []
