"""The errors of ``morphaug.ndimage`` that are SciPy's too: where SciPy raises another class
than morphaug's for a bad argument, the error is both."""

from __future__ import annotations

__all__ = ["ArgumentError", "DtypeError"]


class ArgumentError(ValueError, RuntimeError):
    """A bad argument: SciPy raises ``RuntimeError`` here, morphaug ``ValueError``."""


class DtypeError(TypeError, ValueError, RuntimeError):
    """A bad output dtype: SciPy raises ``RuntimeError`` (EDT, BF) or ``ValueError`` (CDT)
    here, morphaug ``TypeError``."""
