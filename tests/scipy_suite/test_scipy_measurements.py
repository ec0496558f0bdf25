"""SciPy's ``test_measurements.py``, run against morphaug through a facade.

As ``test_scipy_morphology.py`` does for the morphology tests: the installed
``scipy/ndimage/tests/test_measurements.py`` is loaded as a fresh module whose
``ndimage`` is :data:`facade`, a module object with ``scipy.ndimage``'s
measurement and labelling names. Each one takes NumPy arrays, calls
``morphaug.ndimage`` on ``(1, 1, *shape)`` tensors (``labels`` broadcast to
the input's shape first, as SciPy broadcasts them; ``output=`` arrays are
written in place) and returns what SciPy returns: NumPy scalars where the
result is one value, arrays, tuples of coordinates (or lists of them) for
positions and centers of mass, slices for ``find_objects``, a dict of index
arrays for ``value_indices``. A name morphaug lacks is an ``AttributeError``
(SciPy's own function is never used), private helpers included.
``conftest.py`` supplies the ``xp`` fixture and marks the known differences.
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
_BATCHED = ("input", "labels", "markers", "arr")
#: Functions whose result is a position (or positions) along each axis, and its element type.
_POSITIONS = {"minimum_position": int, "maximum_position": int, "center_of_mass": float}


def _tensor(array: np.ndarray) -> torch.Tensor:
    """``array`` as a tensor sharing its memory, or a copy where torch cannot share it."""
    if array.flags.writeable and all(s >= 0 for s in array.strides):
        return torch.from_numpy(array)
    return torch.from_numpy(array.copy())


def _arguments(arguments: dict) -> dict:
    """The bound arguments as morphaug takes them; ``output`` arrays are kept under ``_written``."""
    shape = np.shape(arguments.get("input", arguments.get("arr")))
    converted = {}
    for name, value in arguments.items():
        if name in _BATCHED and value is not None:
            array = np.asarray(value)
            if name == "labels" and array.shape != shape:
                array = np.broadcast_to(array, shape)  # SciPy broadcasts labels against input
            value = _tensor(array)[None, None]
        elif name == "index" and isinstance(value, tuple):
            value = list(value)
        elif name == "output" and isinstance(value, np.ndarray):
            converted["_written"] = value
            value = _tensor(value)[None, None]
        elif name == "output" and value is not None:
            value = torch.from_numpy(np.empty(0, dtype=value)).dtype
        converted[name] = value
    return converted


def _coordinates(array: np.ndarray, kind):
    """A ``(..., S)`` array of positions as SciPy returns them: a tuple, or a list of tuples."""
    if array.ndim == 1:
        return tuple(kind(v) for v in array)
    return [tuple(kind(v) for v in row) for row in array.reshape(-1, array.shape[-1])]


def _result(name: str, value, written):
    """A morphaug result for one ``(1, 1, *shape)`` input as SciPy returns it."""
    if name == "value_indices":
        return {key: tuple(t.numpy() for t in where[2:]) for key, where in value.items()}
    if name == "find_objects":
        boxes, present = value
        return [tuple(map(slice, *box)) if found else None
                for box, found in zip(boxes[0, 0].tolist(), present[0, 0].tolist())]
    if name == "label":
        labels, count = value if isinstance(value, tuple) else (None, value)
        count = int(count[0, 0])
        return count if written is not None else (labels[0, 0].numpy(), count)
    if name == "watershed_ift" and written is not None:
        return written
    if name == "extrema":
        low, high, low_at, high_at = (v[0, 0].numpy() for v in value)
        return low[()], high[()], _coordinates(low_at, int), _coordinates(high_at, int)
    array = value[0, 0].numpy()
    if name in _POSITIONS:
        return _coordinates(array, _POSITIONS[name])
    return array[()]


def _batched(name: str):
    """``morphaug.ndimage.<name>`` on NumPy arrays, as ``scipy.ndimage.<name>``."""
    function = getattr(morphaug.ndimage, name)
    signature = inspect.signature(function)

    @functools.wraps(getattr(scipy.ndimage, name))
    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        converted = _arguments(bound.arguments)
        written = converted.pop("_written", None)
        return _result(name, function(**converted), written)

    return call


def _element(name: str):
    """``generate_binary_structure`` / ``iterate_structure`` returning NumPy arrays."""
    function = getattr(morphaug.ndimage, name)

    @functools.wraps(getattr(scipy.ndimage, name))
    def call(*args, **kwargs):
        return function(*args, **kwargs).numpy()

    return call


facade = types.ModuleType("morphaug_as_scipy_ndimage")
for _name in morphaug.ndimage.__all__:
    _structure = _name in ("generate_binary_structure", "iterate_structure")
    setattr(facade, _name, _element(_name) if _structure else _batched(_name))


def _load_suite() -> types.ModuleType:
    """A fresh copy of SciPy's test module (relative imports intact), on the facade."""
    found = importlib.util.find_spec("scipy.ndimage.tests.test_measurements")
    if found is None:
        pytest.skip("this SciPy is installed without its tests", allow_module_level=True)
    spec = importlib.util.spec_from_file_location(
        "scipy.ndimage.tests.test_measurements_on_morphaug", found.origin)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ndimage = facade
    return module


_suite = _load_suite()
globals().update({name: value for name, value in vars(_suite).items()
                  if name.startswith(("test_", "Test"))})
