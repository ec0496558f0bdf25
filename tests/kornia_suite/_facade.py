"""``kornia`` as Kornia's tests see it: Kornia, with ``kornia.contrib``'s ``connected_components``,
``distance_transform`` and ``DistanceTransform`` from :mod:`morphaug.adapters.kornia.contrib`."""

from __future__ import annotations

import types

import kornia as _kornia
import kornia.contrib as _kornia_contrib

from morphaug.adapters.kornia import contrib as _contrib


class _Module(types.ModuleType):
    """A module whose names are ``base``'s but for those set on it."""

    def __init__(self, name: str, base: types.ModuleType):
        super().__init__(name)
        self._base = base

    def __getattr__(self, name):
        return getattr(self._base, name)


kornia = _Module("kornia", _kornia)
kornia.contrib = _Module("kornia.contrib", _kornia_contrib)
for _name in _contrib.__all__:
    setattr(kornia.contrib, _name, getattr(_contrib, _name))
