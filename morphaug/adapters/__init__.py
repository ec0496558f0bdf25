"""Thin adapters of :mod:`morphaug.transforms` for MONAI, torchvision v2 and Kornia.

Each submodule imports its framework when it is imported itself, never
before: ``import morphaug.adapters`` imports none of them, and
``morphaug.adapters.monai`` (or ``from morphaug.adapters import monai``)
raises an ``ImportError`` naming the package to install (``pip install
monai``) when MONAI is missing.

``morphaug.adapters.monai``
    ``<Name>d`` dictionary transforms (``MapTransform``; also
    ``RandomizableTransform`` when random) for ``monai.transforms.Compose``,
    per sample ``(C, *spatial)`` in ``Dataset`` workers or, with
    ``batched=True``, on a collated batch ``(B, C, *spatial)``.
``morphaug.adapters.torchvision``
    ``torchvision.transforms.v2.Transform`` subclasses: ``tv_tensors.Mask`` is
    a label map, ``tv_tensors.Image`` (and a pure tensor, by v2's rules) an
    image, every other type passes through.
``morphaug.adapters.kornia``
    ``<Name>2D`` / ``<Name>3D`` augmentations for
    ``kornia.augmentation.AugmentationSequential(..., data_keys=["input", "mask"])``.

The adapters map keys, types, ``prob``/``p`` and random states onto the core
transforms and call them: parameters, randomness and kernels live in the core.

Example:
    >>> import morphaug.adapters
    >>> sorted(morphaug.adapters.__all__)
    ['kornia', 'monai', 'torchvision']
"""

from __future__ import annotations

import importlib

__all__ = ["monai", "torchvision", "kornia"]


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
