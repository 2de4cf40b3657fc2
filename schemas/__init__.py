"""Data and declarations: severity tables, the 1000 ImageNet wnids, record and manifest formats.

Importable without Beam, TensorFlow or any image library beyond NumPy.
"""

__all__ = []
