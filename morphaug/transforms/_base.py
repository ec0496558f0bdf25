"""The batch-transform base class: keys and roles, tensor subclasses, randomness, replay.

A transform is called on a tensor ``(B, C, *spatial)`` or on a mapping whose
``keys`` entries are such tensors. Each key has a role, ``"label"`` or
``"image"`` (``keys={key: role}``, or a sequence of keys that all take the
transform's :attr:`~BatchTransform.role`); keys of a role the transform does
not change pass through untouched. A transform works in two steps, as
torchvision v2 and Kornia do:

* ``make_params(batch, generator) -> dict[str, Tensor]`` draws every random
  parameter once, for the whole batch, as tensors on the batch's device;
* ``apply(x, params) -> Tensor`` is deterministic and is called on every key
  of the transform's role with the same ``params``, so all keys of one sample
  share one draw (a transform that changes two roles names the function of
  each in ``appliers()``).

``transform(data, params=...)`` replays a draw; the last draw is kept in
``transform.last_params``. A replayed draw is checked against
``param_spec(batch)`` (one :class:`Param` per parameter): every parameter
present and no other, each a tensor of the drawn kind and shape (batch size
first) on the batch's device or the CPU, and, where reading it costs
nothing (a tensor on the CPU), each value one the transform can apply: an
index into its choices, a value its arguments could take (a radius >= 0, a
strength in [0, 1], not only the configured range: a replay may set any).
On an accelerator the values are not read (that would be a host sync in
every adapter call, which replays the core's own draw): a draw made there
is valid by construction. Nor are they under ``torch.compile`` (a
data-dependent branch).

Under ``torch.compile`` (``fullgraph=True`` included) a call is traced into
the graph, drawing and replaying alike, with or without ``generator=``.
Dynamo cannot trace a ``torch.Generator``, so a draw from a transform's
generator is one op of the graph, ``morphaug_random::draw``, which draws
from that generator when the graph runs, in eager order: a compiled step
draws what the eager step draws. (A generator passed to ``make_params``
inside compiled code must be one a transform holds.)
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
import weakref
from collections.abc import Callable, Mapping, Sequence

import torch

from .._checks import check_probability, is_int
from .._sync import to_device

__all__ = ["BatchTransform", "Deterministic", "Param", "ROLES", "generator_device", "uniform", "normal", "randint", "per_sample",
           "check_choices", "check_int_range", "check_float_range", "check_sampling", "sampling_for"]

#: A key's role: integer/one-hot label maps or float intensities.
ROLES = ("label", "image")


def generator_device(generator: torch.Generator | None, device: torch.device) -> torch.device:
    """Where draws happen: the generator's device, or ``device`` for torch's default generator."""
    return generator.device if generator is not None else device


#: The generators transforms hold, by ``id``: what a compiled draw (:func:`_compiled_draw`) draws from.
_GENERATORS: weakref.WeakValueDictionary[int, torch.Generator] = weakref.WeakValueDictionary()


@torch.library.custom_op("morphaug_random::draw", mutates_args=(),
                         tags=(torch.Tag.nondeterministic_seeded, torch.Tag.cudagraph_unsafe))
def _compiled_draw(kind: str, shape: list[int], low: int, high: int, generator_id: int,
                   device: torch.device) -> torch.Tensor:
    """One draw of :func:`_draw` from the generator ``_GENERATORS[generator_id]``, as an op of a compiled graph.

    Dynamo cannot trace a ``torch.Generator`` (a graph break, or an error with
    ``fullgraph=True``), so under ``torch.compile`` a draw from a transform's
    generator is this op: it runs the eager draw, from the same generator, in
    the graph's order. Tagged ``nondeterministic_seeded``: never merged with
    another draw, never recomputed in a backward pass; and ``cudagraph_unsafe``:
    it runs outside CUDA graphs (``mode="reduce-overhead"``), which would
    replay one draw forever.
    """
    generator = _GENERATORS.get(generator_id)
    if generator is None:
        raise RuntimeError("compiled code draws from the generators that morphaug transforms hold (generator=, "
                           "or transform.generator = g); this generator is held by none")
    return _draw(kind, shape, low, high, generator, device)


@_compiled_draw.register_fake
def _(kind, shape, low, high, generator_id, device):
    return torch.empty(shape, dtype=torch.int64 if kind == "randint" else torch.float32, device=device)


def _draw(kind: str, shape, low: int, high: int, generator: torch.Generator | None,
          device: torch.device) -> torch.Tensor:
    """``torch.rand`` (``"uniform"``), ``torch.randn`` (``"normal"``) or ``torch.randint(low, high + 1)``
    on the generator's device, moved to ``device``; traced by Dynamo as :func:`_compiled_draw` when
    ``generator`` is given."""
    if generator is not None and torch.compiler.is_compiling():
        return _compiled_draw(kind, list(shape), low, high, id(generator), device)
    where = generator_device(generator, device)
    if kind == "uniform":
        values = torch.rand(shape, generator=generator, device=where)
    elif kind == "normal":
        values = torch.randn(shape, generator=generator, device=where)
    else:
        values = torch.randint(low, high + 1, shape, generator=generator, device=where)
    return to_device(values, device)  # a CPU generator's draw: staged, no blocking copy


def uniform(shape, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """Uniform ``[0, 1)`` float32 samples on ``device``, drawn from ``generator``.

    The numbers are drawn on the generator's device (a CPU generator with a
    CUDA batch draws on the CPU and copies), or on ``device`` from torch's
    default generator when ``generator`` is None.
    """
    return _draw("uniform", shape, 0, 0, generator, device)


def normal(shape, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """Standard normal float32 samples on ``device`` (see :func:`uniform`)."""
    return _draw("normal", shape, 0, 0, generator, device)


def randint(low: int, high: int, shape, generator: torch.Generator | None,
            device: torch.device) -> torch.Tensor:
    """Uniform int64 samples in ``[low, high]`` (both included) on ``device``."""
    return _draw("randint", shape, low, high, generator, device)


def per_sample(params: torch.Tensor, ndim: int) -> torch.Tensor:
    """``(B, ...)`` parameters viewed against a ``ndim``-D tensor (trailing size-1 dims)."""
    return params.view(*params.shape, *([1] * (ndim - params.ndim)))


def check_choices(values, allowed: Sequence[str], name: str) -> tuple[str, ...]:
    """A non-empty tuple of unique names from ``allowed`` (a single name is accepted)."""
    if isinstance(values, str):
        values = (values,)
    try:
        values = tuple(values)
    except TypeError:
        raise TypeError(f"{name} must be a name or a sequence of names, got {values!r}") from None
    if not values:
        raise ValueError(f"{name} must not be empty; choose from {tuple(allowed)}")
    for value in values:
        if value not in allowed:
            raise ValueError(f"{name}: unknown name {value!r}; choose from {tuple(allowed)}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must not repeat names, got {values!r}")
    return values


def check_int_range(value, name: str, minimum: int) -> tuple[int, int]:
    """An int ``v`` as ``(v, v)`` or a pair ``(low, high)`` with ``minimum <= low <= high``."""
    pair = (value, value) if is_int(value) else value
    if (not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2
            or not all(is_int(v) for v in pair)):
        raise TypeError(f"{name} must be an int or a pair of ints (low, high), got {value!r}")
    low, high = int(pair[0]), int(pair[1])
    if low > high:
        raise ValueError(f"{name}: low must not exceed high, got {value!r}")
    if low < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return low, high


def check_float_range(value, name: str, minimum: float) -> tuple[float, float]:
    """A number ``v`` as ``(v, v)`` or a pair ``(low, high)`` with ``minimum <= low <= high``."""
    is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    pair = (value, value) if is_number else value
    if (not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2
            or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in pair)):
        raise TypeError(f"{name} must be a number or a pair of numbers (low, high), got {value!r}")
    low, high = float(pair[0]), float(pair[1])
    if not low <= high:
        raise ValueError(f"{name}: low must not exceed high, got {value!r}")
    if low < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return low, high


def check_sampling(sampling) -> tuple[float, ...] | None:
    """None, or voxel spacing as a tuple of positive floats: one number for every axis, or one per axis."""
    if sampling is None:
        return None
    values = (sampling,) if isinstance(sampling, numbers.Real) else tuple(sampling)
    if not values or any(isinstance(s, bool) or not isinstance(s, numbers.Real) or not s > 0 for s in values):
        raise ValueError(f"sampling must be a positive number or one per spatial axis, got {sampling!r}")
    return tuple(float(s) for s in values)


def sampling_for(sampling: tuple[float, ...] | None, ndim: int, owner: str) -> tuple[float, ...] | None:
    """``sampling`` (from :func:`check_sampling`) for ``ndim`` spatial axes: a single number repeated."""
    if sampling is None or len(sampling) == ndim:
        return sampling
    if len(sampling) == 1:
        return sampling * ndim
    raise ValueError(f"{owner}: sampling {sampling} does not match {ndim} spatial axes")


_KINDS = {"bool": "a bool", "int": "an integer", "float": "a floating-point"}


def _kind(dtype: torch.dtype) -> str | None:
    if dtype == torch.bool:
        return "bool"
    if dtype.is_floating_point:
        return "float"
    return None if dtype.is_complex else "int"


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter of a draw: what ``make_params`` draws and what ``params=`` must hold.

    Attributes:
        dtype: the drawn dtype; a replayed tensor may have any dtype of its
            kind (bool, integer, floating point) and is cast to it.
        shape: the shape after the batch size; an entry that is a name is a
            size that the parameters naming it share (the first one sets it).
        low, high: the inclusive range of the values (``high`` may be
            ``math.inf``), or None.
        values: a further check of the values, returning what is wrong, or None.

    Values are checked where reading them is free: in a tensor on the CPU,
    outside ``torch.compile``.
    """

    dtype: torch.dtype
    shape: tuple = ()
    low: float | None = None
    high: float | None = None
    values: Callable[[torch.Tensor], str | None] | None = None

    def check(self, value, name: str, batch: torch.Tensor, sizes: dict, owner: str) -> torch.Tensor:
        """``value`` checked as parameter ``name`` of a draw for ``batch``: in ``dtype`` on the batch's device.

        ``sizes`` holds the named sizes set so far.
        """
        where = f"{owner}: params[{name!r}]"
        kind = _kind(self.dtype)
        if not isinstance(value, torch.Tensor) or _kind(value.dtype) != kind:
            got = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
            raise TypeError(f"{where} must be {_KINDS[kind]} tensor (as in last_params), got {got}")
        shape = [batch.shape[0]]
        for axis, size in enumerate(self.shape, start=1):
            if isinstance(size, str):  # a shared size: the first parameter with it sets it
                size = sizes.setdefault(size, value.shape[axis] if value.ndim == len(self.shape) + 1 else "?")
            shape.append(size)
        if list(value.shape) != shape:
            raise ValueError(f"{where} must have shape {tuple(shape)} (batch size {batch.shape[0]}, as in "
                             f"last_params), got {tuple(value.shape)}")
        if value.device != batch.device and value.device.type != "cpu":
            raise ValueError(f"{where} is on {value.device}, the batch on {batch.device} (params go on the "
                             "batch's device or the CPU)")
        value = value.to(self.dtype)
        if value.device.type == "cpu" and value.numel() and not torch.compiler.is_compiling():
            if self.low is not None:
                lowest, highest = value.min().item(), value.max().item()
                if not self.low <= lowest <= highest <= self.high:  # NaN fails too
                    allowed = f">= {self.low}" if self.high == math.inf else f"in {self.low} .. {self.high}"
                    raise ValueError(f"{where} must hold values {allowed}, got {lowest} .. {highest}")
            problem = self.values(value) if self.values is not None else None
            if problem:
                raise ValueError(f"{where} {problem}")
        return to_device(value, batch.device)


def _check_keys(keys, name: str) -> tuple:
    if isinstance(keys, str) or not isinstance(keys, Sequence):
        keys = (keys,)
    keys = tuple(keys)
    if not keys:
        raise ValueError(f"{name} must name at least one key")
    if len(set(keys)) != len(keys):
        raise ValueError(f"{name} must not repeat keys, got {keys!r}")
    return keys


def _check_roles(keys, role: str, name: str) -> dict:
    """``{key: role}`` from a mapping of keys to roles, or from keys that all take ``role``."""
    if not isinstance(keys, Mapping):
        return dict.fromkeys(_check_keys(keys, name), role)
    if not keys:
        raise ValueError(f"{name} must name at least one key")
    for key, value in keys.items():
        if value not in ROLES:
            raise ValueError(f"{name}: the role of key {key!r} must be one of {ROLES}, got {value!r}")
    return dict(keys)


def _unwrap(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a plain ``torch.Tensor`` (MetaTensor, tv_tensors and other subclasses)."""
    return x if type(x) is torch.Tensor else x.as_subclass(torch.Tensor)


def _rewrap(result: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``result`` as ``like``'s tensor subclass, with a copy of its metadata.

    Subclasses keep their metadata as instance attributes (MONAI MetaTensor:
    ``meta``, ``applied_operations``, ``is_batch``; torchvision tv_tensors
    such as BoundingBoxes: ``format``, ``canvas_size``); a deep copy of them
    goes with the result, so the input's metadata is never shared.
    """
    if type(like) is torch.Tensor:
        return result
    wrapped = result.as_subclass(type(like))
    wrapped.__dict__.update(copy.deepcopy(like.__dict__))
    return wrapped


class Deterministic:
    """Mixed in before :class:`BatchTransform` by a transform that draws nothing: every sample is
    transformed, by the same arguments (no ``"apply"`` flag, nothing to replay)."""

    def make_params(self, batch: torch.Tensor, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        return {}

    def param_spec(self, batch: torch.Tensor) -> dict[str, Param]:
        return {}


class BatchTransform:
    """Base class of the dictionary-aware batch transforms.

    Subclasses set :attr:`role`, validate their arguments in ``__init__``,
    and implement :meth:`make_params` (calling ``super().make_params`` for the
    per-sample gate ``"apply"``), :meth:`param_spec` (what each parameter
    drawn is, against which ``params=`` are checked) and :meth:`apply`; one
    that changes more than one role also overrides :meth:`appliers`.

    Args:
        keys: the mapping keys to transform (ignored when called on a tensor):
            a key or a sequence of keys, each of role :attr:`role`, or a
            mapping ``{key: role}`` with roles ``"label"`` and ``"image"``.
            Keys of a role the transform does not change pass through
            untouched (their ``output_keys`` are not written).
        output_keys: where results go, one per key; default: replace ``keys``.
        allow_missing_keys: skip absent keys instead of raising ``KeyError``.
        prob: per-sample probability of transforming a sample.
        generator: a ``torch.Generator`` for all draws; None uses torch's
            default generator of the batch's device (so ``torch.manual_seed``
            makes calls reproducible). Either compiles with
            ``torch.compile(fullgraph=True)`` (see the module notes).
    """

    #: The role :meth:`apply` changes: that of a bare tensor and of ``keys`` given as a sequence.
    role: str = "label"
    #: Constructor arguments shown by ``repr``.
    _repr_fields: tuple[str, ...] = ()

    def __init__(self, keys, *, output_keys=None, allow_missing_keys: bool = False,
                 prob: float = 1.0, generator: torch.Generator | None = None):
        #: ``{key: role}`` for every key; ``keys`` lists them in order.
        self.roles = _check_roles(keys, self.role, "keys")
        self.keys = tuple(self.roles)
        self.output_keys = self.keys if output_keys is None else _check_keys(output_keys, "output_keys")
        if len(self.output_keys) != len(self.keys):
            raise ValueError(
                f"output_keys must have one entry per key: {len(self.keys)} keys {self.keys!r}, "
                f"{len(self.output_keys)} output_keys {self.output_keys!r}"
            )
        self.allow_missing_keys = bool(allow_missing_keys)
        self.prob = check_probability(prob, "prob")
        self.generator = generator
        self.last_params: dict[str, torch.Tensor] | None = None

    @property
    def generator(self) -> torch.Generator | None:
        """The ``torch.Generator`` of all draws, or None for torch's default generator."""
        return self._generator

    @generator.setter
    def generator(self, generator: torch.Generator | None) -> None:
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
        if generator is not None:
            _GENERATORS[id(generator)] = generator  # what compiled draws draw from
        self._generator = generator

    def __setstate__(self, state: dict) -> None:
        """Unpickled or copied: the generator's copy is registered for compiled draws too."""
        self.__dict__.update(state)
        self.generator = self._generator

    # ----------------------------------------------------------------- hooks
    def make_params(self, batch: torch.Tensor, generator: torch.Generator | None = None
                    ) -> dict[str, torch.Tensor]:
        """Draw this call's parameters for ``batch (B, C, *spatial)``.

        The base class draws ``"apply"``: a ``(B,)`` bool tensor, true where a
        sample is transformed (probability ``prob``).
        """
        return {"apply": uniform((batch.shape[0],), generator, batch.device) < self.prob}

    def param_spec(self, batch: torch.Tensor) -> dict[str, Param]:
        """What each parameter that :meth:`make_params` draws for ``batch`` is (see :class:`Param`),
        in order; replayed ``params=`` are checked against it. The base: ``"apply"``."""
        return {"apply": Param(torch.bool)}

    def apply(self, x: torch.Tensor, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Transform one plain tensor ``x (B, C, *spatial)`` of the role :attr:`role` with ``params``.

        Deterministic; :meth:`__call__` calls it on every key of that role.
        """
        raise NotImplementedError

    def appliers(self) -> dict[str, Callable[[torch.Tensor, Mapping[str, torch.Tensor]], torch.Tensor]]:
        """The function each role this transform changes goes through: ``{role: apply}``.

        Keys of the other roles pass through untouched.
        """
        return {self.role: self.apply}

    @property
    def changed_keys(self) -> tuple:
        """The ``keys`` of a role this transform changes."""
        changed = self.appliers()
        return tuple(key for key, role in self.roles.items() if role in changed)

    # ------------------------------------------------------------------ call
    def __call__(self, data, params: Mapping[str, torch.Tensor] | None = None):
        """Transform a tensor (of the role :attr:`role`) or the ``keys`` of a mapping; returns a new object.

        Each key goes through the function of its role (:meth:`appliers`), all
        with one draw; keys of the other roles pass through untouched.

        Args:
            data: a tensor ``(B, C, *spatial)`` or a mapping of such tensors.
            params: a previous draw (``last_params``) to replay, checked against
                :meth:`param_spec` (see the module notes); default: draw.
        """
        appliers = self.appliers()
        if isinstance(data, torch.Tensor):
            entries = [(None, None, appliers[self.role], data)]
        elif isinstance(data, Mapping):
            entries = []
            for key, out_key in zip(self.keys, self.output_keys):
                if key not in data:
                    if self.allow_missing_keys:
                        continue
                    raise KeyError(
                        f"{type(self).__name__}: key {key!r} is not in the data (keys: "
                        f"{list(data)}); pass allow_missing_keys=True to skip it"
                    )
                if self.roles[key] in appliers:
                    entries.append((key, out_key, appliers[self.roles[key]], data[key]))
            if not entries:
                return dict(data)
        else:
            raise TypeError(
                f"{type(self).__name__} expects a tensor (B, C, *spatial) or a mapping, "
                f"got {type(data).__name__}"
            )
        plain = [_unwrap(self._check_tensor(key, value)) for key, _, _, value in entries]
        batch = plain[0]
        for (key, _, _, _), x in zip(entries, plain):
            if x.shape[0] != batch.shape[0] or x.device != batch.device:
                raise ValueError(
                    f"{type(self).__name__}: key {key!r} has batch size {x.shape[0]} on {x.device}, "
                    f"but key {entries[0][0]!r} has {batch.shape[0]} on {batch.device}"
                )
        if params is None:
            params = self.make_params(batch, self.generator)
        else:
            params = self._check_params(params, batch)
        self.last_params = dict(params)

        results = [_rewrap(apply(x, params), like=value) for (_, _, apply, value), x in zip(entries, plain)]
        if isinstance(data, torch.Tensor):
            return results[0]
        output = dict(data)
        for (_, out_key, _, _), result in zip(entries, results):
            output[out_key] = result
        return output

    def _check_tensor(self, key, value) -> torch.Tensor:
        where = "input" if key is None else f"key {key!r}"
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{type(self).__name__}: {where} must be a tensor, got {type(value).__name__}")
        if value.ndim < 4:
            raise ValueError(
                f"{type(self).__name__}: {where} must have shape (B, C, *spatial) with 2 or more "
                f"spatial axes, got shape {tuple(value.shape)}"
            )
        role = self.role if key is None else self.roles[key]
        if role == "label":
            self._check_whole(_unwrap(value), where)
        self._check_input(value, role, where)
        return value

    def _check_whole(self, labels: torch.Tensor, where: str) -> None:
        """Raise for float labels that are not whole numbers (0.5, NaN, inf): no class value, no one-hot
        channel. Read where that is free: on the CPU, outside ``torch.compile``."""
        if (labels.is_floating_point() and labels.device.type == "cpu" and not torch.compiler.is_compiling()
                and not bool((labels.frac() == 0).all())):
            raise ValueError(
                f"{type(self).__name__}: {where} is a label map but holds values that are not whole numbers "
                "(e.g. 0.5 or NaN); labels hold class values (index maps) or 0/1 channels (one-hot): round "
                "them first (labels.round())"
            )

    def _check_input(self, x: torch.Tensor, role: str, where: str) -> None:
        """Raise for a tensor ``x`` of ``role`` that this transform cannot take, naming it ``where``
        (``"input"`` or ``"key 'name'"``), before anything is drawn; the base takes any."""

    def _check_params(self, params, batch: torch.Tensor) -> dict[str, torch.Tensor]:
        """A replayed draw checked against :meth:`param_spec` (see the module notes)."""
        owner = type(self).__name__
        if not isinstance(params, Mapping):
            raise TypeError(f"{owner}: params must be a mapping (see last_params), got {type(params).__name__}")
        spec = self.param_spec(batch)
        for name in spec:
            if name not in params:
                raise ValueError(f"{owner}: params lack {name!r} (replay a whole draw: its params are "
                                 f"{list(spec)}, as in last_params)")
        for name in params:
            if name not in spec:
                raise ValueError(f"{owner}: params[{name!r}] is not a parameter of this transform (its params "
                                 f"are {list(spec)})")
        sizes = {}
        return {name: param.check(params[name], name, batch, sizes, owner) for name, param in spec.items()}

    def _keys_repr(self) -> str:
        """``keys=`` as given: the keys when all take :attr:`role`, else the roles."""
        same = all(role == self.role for role in self.roles.values())
        return f"keys={self.keys if same else self.roles!r}"

    def __repr__(self) -> str:
        fields = list(self._repr_fields)
        if self.output_keys != self.keys:
            fields.insert(0, "output_keys")
        args = ", ".join([self._keys_repr(), *(f"{name}={getattr(self, name)!r}" for name in fields)])
        return f"{type(self).__name__}({args})"
