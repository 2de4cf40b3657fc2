"""Installers: frost textures, filter-model export, the bundled sample."""

__all__ = []
