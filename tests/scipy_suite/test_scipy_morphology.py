"""SciPy's ``test_morphology.py``, run against morphaug through a facade.

The installed ``scipy/ndimage/tests/test_morphology.py`` is loaded as a fresh
module whose ``ndimage`` is :data:`facade`: a module object that looks like
``scipy.ndimage`` to those tests. Its morphology and distance functions take
NumPy arrays, call ``morphaug.ndimage`` on ``(1, 1, *shape)`` tensors sharing
their memory (so ``output=``, ``distances=`` and ``indices=`` arrays are
written in place, and an input given as its own output aliases as in SciPy)
and return NumPy arrays, tuples or ``None`` as SciPy does. Every other name
is ``scipy.ndimage``'s own. Its test classes and functions are collected
from this module; ``conftest.py`` supplies the ``xp`` fixture and marks the
known differences.

The facade also bridges two documented dtype differences, so that SciPy's
dtype-checking assertions see SciPy's dtypes: Euclidean distances are asked
for in float64 (morphaug's default is float32), and the brute-force taxicab
and chessboard distances are read as uint32 (morphaug returns int32; the
bits are SciPy's).
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import types

import numpy as np
import pytest
import scipy.ndimage
import torch

import morphaug.ndimage

#: Arguments that are arrays of the input's shape: batched as ``(1, 1, *shape)``.
_BATCHED = ("input", "mask", "output", "distances")


def _tensor(array: np.ndarray) -> torch.Tensor:
    """``array`` as a tensor sharing its memory, or a copy where torch cannot share it."""
    if array.flags.writeable and all(s >= 0 for s in array.strides):
        return torch.from_numpy(array)
    return torch.from_numpy(array.copy())


def _torch_dtype(dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


def _argument(name: str, value, outputs: dict):
    """One argument as morphaug takes it; ``outputs`` maps written tensors to their arrays."""
    if name == "output" and isinstance(value, (type, np.dtype, str)):
        return _torch_dtype(value)
    if name in _BATCHED and value is not None:
        array = value if name in ("output", "distances") else np.asarray(value)
        tensor = _tensor(array)[None, None]
    elif name == "indices" and value is not None:
        array, tensor = value, _tensor(value)[:, None, None]
    else:
        return value
    if name in ("output", "distances", "indices"):
        outputs[id(tensor)] = array
    return tensor


def _result(value, outputs: dict, rank: int, unsigned: bool):
    """A morphaug result as SciPy returns it."""
    if isinstance(value, tuple):
        return tuple(_result(v, outputs, rank, unsigned) for v in value)
    if not isinstance(value, torch.Tensor):
        return value
    if id(value) in outputs:
        return outputs[id(value)]
    array = value.numpy()
    if array.ndim == rank + 3:  # indices (S, 1, 1, *shape)
        return array[:, 0, 0]
    array = array[0, 0]
    return array.view(np.uint32) if unsigned and array.dtype == np.int32 else array


def _batched(name: str):
    """``morphaug.ndimage.<name>`` on one NumPy array, as ``scipy.ndimage.<name>``."""
    function = getattr(morphaug.ndimage, name)
    signature = inspect.signature(function)

    @functools.wraps(getattr(scipy.ndimage, name))
    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = bound.arguments
        rank = np.ndim(arguments["input"])
        metric = arguments.get("metric", "euclidean")
        euclidean = name == "distance_transform_edt" or (
            name == "distance_transform_bf" and str(metric).lower() == "euclidean")
        implicit = None
        if euclidean and arguments["return_distances"] and arguments["distances"] is None:
            implicit = arguments["distances"] = np.empty(np.shape(arguments["input"]), np.float64)
        outputs = {}
        for key, value in arguments.items():
            arguments[key] = _argument(key, value, outputs)
        result = function(*bound.args, **bound.kwargs)
        result = _result(result, outputs, rank, unsigned=name == "distance_transform_bf")
        if implicit is not None:
            result = implicit if result is None else (implicit, result)
        return result

    return call


def _element(name: str):
    """``generate_binary_structure`` / ``iterate_structure`` returning NumPy arrays."""
    function = getattr(morphaug.ndimage, name)

    @functools.wraps(getattr(scipy.ndimage, name))
    def call(*args, **kwargs):
        result = function(*args, **kwargs)
        if isinstance(result, tuple):
            return result[0].numpy(), result[1]
        return result.numpy()

    return call


class _Facade(types.ModuleType):
    """``scipy.ndimage`` with its morphology and distance functions from morphaug."""

    def __getattr__(self, name):
        return getattr(scipy.ndimage, name)


facade = _Facade("morphaug_as_scipy_ndimage")
for _name in morphaug.ndimage.__all__:
    _structure = _name in ("generate_binary_structure", "iterate_structure")
    setattr(facade, _name, _element(_name) if _structure else _batched(_name))


def _load_suite() -> types.ModuleType:
    """A fresh copy of SciPy's test module (relative imports intact), on the facade."""
    found = importlib.util.find_spec("scipy.ndimage.tests.test_morphology")
    if found is None:
        pytest.skip("this SciPy is installed without its tests", allow_module_level=True)
    origin = found.origin
    spec = importlib.util.spec_from_file_location(
        "scipy.ndimage.tests.test_morphology_on_morphaug", origin)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ndimage = facade
    return module


_suite = _load_suite()
globals().update({name: value for name, value in vars(_suite).items()
                  if name.startswith(("test_", "Test"))})
