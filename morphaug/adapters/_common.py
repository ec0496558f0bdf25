"""What the MONAI, torchvision and Kornia adapters share: real signatures, and the checks of their own flags.

Each adapter base class mixes in :class:`Adapted`; every class that sets
``core_class`` gets

* the signature of ``core_class.__init__``, less the parameters its framework
  supplies itself (``_dropped``), in the framework's spelling (``_renamed``,
  e.g. ``prob`` -> ``p``), followed by the adapter's own parameters: the
  keyword-only parameters of the ``__init__`` methods that its module defines
  along its MRO (the nearest wins), with their defaults;
* an ``__init__`` that takes exactly those: it binds the call to the signature
  (an unknown, missing or extra argument is a ``TypeError`` naming it), fills
  in the defaults and calls the class's own ``__init__`` with every argument
  by keyword, the core's under the core's names;
* an ``Args:`` section in its docstring documenting each parameter once: the
  core's from the core's docstring (under the adapter's names), the adapter's
  own from the ``Args:`` of the ``__init__`` that defines it.

So ``inspect.signature``, ``help()``, IDEs and MONAI's config tooling see the
parameters the core transform documents, and an adapter never restates them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping

from .. import transforms

__all__ = ["Adapted", "check_flag"]

_ENTRY = re.compile(r" {4}(\w+(?:, \w+)*): ")


def check_flag(value, name: str) -> bool:
    """``value`` if it is a bool; a ``TypeError`` naming ``name`` otherwise."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def _args(doc: str | None) -> list[tuple[list[str], list[str]]]:
    """The entries of the Google-style ``Args:`` section of ``doc``: (names, lines), one entry per name group."""
    lines = inspect.cleandoc(doc or "").splitlines()
    if "Args:" not in lines:
        return []
    entries = []
    for line in lines[lines.index("Args:") + 1:]:
        if line and not line.startswith(" "):
            break
        entry = _ENTRY.match(line)
        if entry:
            entries.append((entry.group(1).split(", "), [line[entry.end():]]))
        elif entries:
            entries[-1][1].append(line[4:])
    for _, text in entries:
        while not text[-1].strip():
            text.pop()
    return entries


def _own_parameters(cls) -> tuple[dict[str, inspect.Parameter], dict[str, list[str]]]:
    """The adapter's own parameters and their docs: keyword-only parameters of its module's ``__init__`` methods."""
    parameters, docs = {}, {}
    for klass in reversed(cls.__mro__):  # the farthest first: a nearer definition replaces it
        init = vars(klass).get("__init__")
        if init is None or klass.__module__ != cls.__module__:
            continue
        for parameter in inspect.signature(init, eval_str=True).parameters.values():
            if parameter.kind is parameter.KEYWORD_ONLY:
                parameters[parameter.name] = parameter
        docs.update({name: text for names, text in _args(init.__doc__) for name in names})
    return parameters, docs


def _core_entries(cls) -> list[tuple[list[str], list[str]]]:
    """The core's ``Args:`` entries under the adapter's names, their references to the core's docs made absolute."""
    core = f"{transforms.__name__}.{cls.core_class.__name__}"
    absolute = [(r":class:`(\w+)`", rf":class:`{transforms.__name__}.\1`"), (r"\bsee above\b", f"see :class:`{core}`"),
                (r"\bsee Convention\b", f"see Convention in :class:`{core}`")]
    entries = []
    for names, text in _args(cls.core_class.__doc__):
        kept = [cls._renamed.get(name, name) for name in names if name not in cls._dropped]
        for pattern, replacement in absolute:
            text = [re.sub(pattern, replacement, line) for line in text]
        if kept:
            entries.append((kept, text))
    return entries


def _docstring(cls, own_docs: Mapping[str, list[str]]) -> str:
    """``cls``'s docstring with an ``Args:`` section before its ``Example:``: the core's parameters, then its own."""
    section = ["Args:"]
    for names, text in _core_entries(cls) + [([name], text) for name, text in own_docs.items()]:
        section.append(f"    {', '.join(names)}: {text[0]}")
        section.extend(f"    {line}".rstrip() for line in text[1:])
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    at = lines.index("Example:") if "Example:" in lines else len(lines)
    rest = [""] + lines[at:] if at < len(lines) else []
    return "\n".join(["\n".join(lines[:at]).rstrip(), "", *section, *rest]) + "\n"


def _adapt(cls) -> None:
    """Give the adapter class ``cls`` its signature, its ``__init__`` and its ``Args:`` (see the module notes)."""
    own, own_docs = _own_parameters(cls)
    core = [parameter for parameter in inspect.signature(cls.core_class, eval_str=True).parameters.values()
            if parameter.name not in cls._dropped]
    core_names = {cls._renamed[parameter.name]: parameter.name for parameter in core if parameter.name in cls._renamed}
    core = [parameter.replace(name=cls._renamed.get(parameter.name, parameter.name)) for parameter in core]
    signature = inspect.Signature(core + list(own.values()))
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{type(self).__name__}: {error}") from None
        bound.apply_defaults()
        init(self, **{core_names.get(name, name): value for name, value in bound.arguments.items()})

    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    __init__.__signature__ = signature.replace(parameters=[self_parameter, *signature.parameters.values()])
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__doc__ = f"Takes the parameters listed under Args in help({cls.__name__})."
    cls.__init__ = __init__
    cls.__doc__ = _docstring(cls, {name: own_docs[name] for name in own if name in own_docs})


class Adapted:
    """Mixin of the adapter base classes: a subclass that sets ``core_class`` gets its real signature.

    See the module notes. ``_dropped`` names the core parameters the
    framework supplies itself, ``_renamed`` maps core names to the
    framework's.
    """

    core_class: type
    _dropped: frozenset[str] = frozenset()
    _renamed: Mapping[str, str] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "core_class" in vars(cls):
            _adapt(cls)
