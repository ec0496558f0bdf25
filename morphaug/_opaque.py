"""Public functions under ``torch.compile``: each call is one opaque op.

A call of a morphaug function reads some of its work on the host (an
element's true positions, a CDT metric, per-sample radii on the CPU, a
fixpoint or convergence test), which Dynamo would trace into data-dependent
ops: a graph break. While Dynamo traces (``torch.compiler.is_compiling()``),
a function decorated with :func:`opaque_under_compile` runs instead as one
custom op, ``morphaug_opaque::<name>``, of schema ``(Tensor[] tensors, str
arguments) -> Tensor[]``:

* its tensor arguments (NumPy arrays as tensors) are the op's tensors; the
  other arguments are a Python literal (``ast.literal_eval``), a constant of
  the graph;
* when the op runs it calls the eager function, so a compiled call gives
  eager mode's result through the same kernel, and eager mode's errors;
* a result given as a tensor (``output=``, ``distances=``, ``indices=``) is
  computed into a new tensor by the op and copied into the given one after
  it, as eager mode copies it;
* gradients are eager mode's: the op's backward is a second opaque op,
  ``<name>_backward``, that re-runs the eager function under autograd and
  differentiates it.

``inductor``, ``aot_eager`` and ``eager`` compile such calls with
``fullgraph=True``. The op's fake kernel takes the results' shapes and
dtypes from the function's :class:`Results`.

Both ops are tagged ``torch.Tag.cudagraph_unsafe``: the eager function may read
the device (the reads of ``morphaug._sync.READS``), stage host elements in
pinned memory or choose its work from host values, none of which a CUDA graph
replays; ``torch.compile(mode="reduce-overhead")`` runs them outside its graphs.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import math
from collections.abc import Callable

import numpy as np
import torch

__all__ = ["Results", "opaque_under_compile", "one_result", "distances"]

_NAMESPACE = "morphaug_opaque"
#: What each op is: not capturable by a CUDA graph (module docstring).
_TAGS = (torch.Tag.cudagraph_unsafe,)
_TENSOR, _DTYPE, _FLOAT = "<tensor>", "<dtype>", "<float>"


@dataclasses.dataclass(frozen=True)
class Results:
    """What a function returns, seen from its arguments ``kw`` (a dict of every argument given;
    tensors may be fakes).

    ``inputs`` name the arguments that must be tensors for a call to be
    compiled as an op (otherwise the function runs, and raises, while
    tracing). ``written`` name the arguments that receive a result when given
    as a tensor. ``returned(kw)`` is the ``(shape, dtype)`` of each tensor
    the function returns besides those, in order; ``rebuild(kw, tensors)``
    makes them (and the given ``written`` tensors, in ``kw``) the function's
    return value.
    """

    inputs: tuple[str, ...]
    returned: Callable[[dict], list[tuple[tuple[int, ...], torch.dtype]]]
    rebuild: Callable[[dict, list[torch.Tensor]], object]
    written: tuple[str, ...] = ()


def one_result(like: str, dtype: Callable[[dict], torch.dtype]) -> Results:
    """One tensor of the shape of argument ``like``, of ``dtype(kw)``; with ``output=``: of its
    dtype (SciPy's filters), or that very tensor when ``output`` is a tensor."""
    def returned(kw):
        output = kw.get("output")
        if isinstance(output, torch.Tensor):
            return []
        return [(tuple(kw[like].shape), output if isinstance(output, torch.dtype) else dtype(kw))]

    def rebuild(kw, tensors):
        output = kw.get("output")
        return output if isinstance(output, torch.Tensor) else tensors[0]

    return Results((like,), returned, rebuild, written=("output",))


def distances(dtype: Callable[[dict], torch.dtype]) -> Results:
    """A distance transform of ``input``: distances of ``dtype(kw)`` and/or int32 indices, as
    SciPy returns them (a tuple, one of them, or ``None`` when all went into ``distances=`` /
    ``indices=``)."""
    def returned(kw):
        x = kw["input"]
        shapes = []
        if kw.get("return_distances", True) and kw.get("distances") is None:
            shapes.append((tuple(x.shape), dtype(kw)))
        if kw.get("return_indices", False) and kw.get("indices") is None:
            shapes.append(((x.ndim - 2,) + tuple(x.shape), torch.int32))
        return shapes

    def rebuild(kw, tensors):
        return tuple(tensors) if len(tensors) == 2 else (tensors[0] if tensors else None)

    return Results(("input",), returned, rebuild, written=("distances", "indices"))


# ------------------------------------------------------------------ the arguments as a literal
def _split(value, tensors: list, name: str):
    """``value`` with tensors (and arrays) moved to ``tensors`` and replaced by placeholders,
    dtypes and non-finite floats by tags: a structure of Python literals."""
    if isinstance(value, np.ndarray):
        value = torch.as_tensor(value)
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return (_TENSOR, len(tensors) - 1)
    if isinstance(value, torch.dtype):
        return (_DTYPE, str(value).removeprefix("torch."))
    if isinstance(value, float) and not math.isfinite(value):
        return (_FLOAT, repr(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_split(item, tensors, name) for item in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{name}: a {type(value).__name__} cannot be passed to a compiled morphaug call "
                    "(tensors, arrays, numbers, strings, dtypes and sequences of them can)")


def _join(value, tensors):
    """The inverse of :func:`_split`."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] in (_TENSOR, _DTYPE, _FLOAT):
        tag, item = value
        if tag == _TENSOR:
            return tensors[item]
        return getattr(torch, item) if tag == _DTYPE else float(item)
    if isinstance(value, (list, tuple)):
        return type(value)(_join(item, tensors) for item in value)
    return value


def _literal(arguments: dict) -> str:
    """``repr(arguments)``: Dynamo folds it while tracing (the arguments are constants), so it is
    a constant of the graph. (Marking it ``assume_constant_result`` would import Dynamo with
    morphaug, seconds.)"""
    return repr(arguments)


def _arguments(literal: str, tensors) -> dict:
    return {name: _join(value, tensors) for name, value in ast.literal_eval(literal).items()}


# ------------------------------------------------------------------ the op
def _autograd_in_op():
    """Autograd back on inside a custom op's kernel, which runs below the autograd keys (the
    other exclusions, e.g. autocast's, stay)."""
    excluded = torch._C._dispatch_tls_local_exclude_set()
    for key in (torch._C.DispatchKey.AutogradFunctionality, torch._C.DispatchKey.AutogradOther,
                torch._C.DispatchKey.AutogradNestedTensor):
        excluded = excluded.remove(key)
    return torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), excluded)


def _define(function: Callable, results: Results):
    def run(tensors, literal):
        kw = _arguments(literal, tensors)
        fresh = {key: torch.empty_like(kw[key]) for key in results.written
                 if isinstance(kw.get(key), torch.Tensor)}
        result = function(**{**kw, **fresh})
        returned = [t for t in (result if isinstance(result, tuple) else (result,))
                    if isinstance(t, torch.Tensor) and not any(t is f for f in fresh.values())]
        return list(fresh.values()) + returned

    op = torch.library.custom_op(f"{_NAMESPACE}::{function.__name__}", run, mutates_args=(), tags=_TAGS,
                                 schema="(Tensor[] tensors, str arguments) -> Tensor[]")

    @op.register_fake
    def _(tensors, literal):
        kw = _arguments(literal, tensors)
        fresh = [torch.empty_like(kw[key]) for key in results.written
                 if isinstance(kw.get(key), torch.Tensor)]
        device = kw[results.inputs[0]].device
        return fresh + [torch.empty(shape, dtype=dtype, device=device)
                        for shape, dtype in results.returned(kw)]

    def gradients(tensors, literal, grads):
        """The gradients of the floating ``tensors``: the eager call, differentiated."""
        tensors = [t.detach().requires_grad_(t.is_floating_point()) for t in tensors]
        wanted = [t for t in tensors if t.requires_grad]
        with _autograd_in_op(), torch.enable_grad():
            outputs = run(tensors, literal)
        pairs = [(o, g) for o, g in zip(outputs, grads) if o.requires_grad and g is not None]
        if not pairs:
            return [torch.zeros_like(t) for t in wanted]
        found = torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True)
        return [torch.zeros_like(t) if g is None else g for t, g in zip(wanted, found)]

    gradients_op = torch.library.custom_op(
        f"{_NAMESPACE}::{function.__name__}_backward", gradients, mutates_args=(), tags=_TAGS,
        schema="(Tensor[] tensors, str arguments, Tensor?[] grads) -> Tensor[]")
    gradients_op.register_fake(
        lambda tensors, literal, grads: [torch.empty_like(t) for t in tensors if t.is_floating_point()])

    def setup_context(ctx, inputs, output):
        tensors, ctx.literal = inputs
        ctx.save_for_backward(*tensors)

    def backward(ctx, grads):
        tensors = ctx.saved_tensors
        found = iter(gradients_op(list(tensors), ctx.literal, list(grads)))
        return [next(found) if t.is_floating_point() else None for t in tensors], None

    op.register_autograd(backward, setup_context=setup_context)
    return op


def opaque_under_compile(results: Results) -> Callable:
    """Decorate a public function so that a call traced by Dynamo is one custom op (module
    docstring); called eagerly, it is the function itself."""
    def decorate(function):
        op = _define(function, results)
        names = tuple(name for name, parameter in inspect.signature(function).parameters.items()
                      if parameter.kind is parameter.POSITIONAL_OR_KEYWORD)

        @functools.wraps(function)
        def call(*args, **kwargs):
            if not torch.compiler.is_compiling():
                return function(*args, **kwargs)
            kw = {**dict(zip(names, args)), **kwargs}
            if len(args) > len(names) or not all(isinstance(kw.get(key), torch.Tensor) for key in results.inputs):
                return function(*args, **kwargs)  # traced: its error, raised while tracing
            tensors = []
            literal = _literal({key: _split(value, tensors, key) for key, value in kw.items()})
            returned = op(tensors, literal)
            written = [kw[key] for key in results.written if isinstance(kw.get(key), torch.Tensor)]
            for given, value in zip(written, returned):
                given.copy_(value)
            return results.rebuild(kw, returned[len(written):])

        return call
    return decorate
