"""The package's shape: its modules import each other without a loop, and a native kernel's
size limits are written in its contract only (``morphaug/_ops/_contracts.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "morphaug"
CONTRACTS = PACKAGE / "_ops" / "_contracts.py"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, names: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports anywhere in it (at module level or inside a
    function: a loop closed by a deferred import is a loop too), relative imports resolved:
    ``from package import name`` names the module ``package.name`` where there is one, else the
    package (whose ``__init__`` defines the name)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in names:  # the module, else the package that holds the name
                target = target.rpartition(".")[0]
            if target:
                found.add(target)
    found.discard(module_name(path))
    return found


def graph() -> dict[str, set[str]]:
    names = modules()
    return {name: imported(path, names) for name, path in names.items()}


def loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_walk_sees_the_package_imports():
    edges = graph()
    assert "morphaug._ops._library" in edges["morphaug._ops.kernels"]
    assert "morphaug.ndimage._binary" in edges["morphaug.ndimage._propagation"]
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_loops():
    """No module of morphaug imports, directly or through others, a module that imports it back
    (a package's ``__init__`` is a module: importing a name it defines imports it)."""
    assert loops(graph()) == []


def size_limits(path: Path) -> list[str]:
    """The size limits that ``path``'s code (not its docstrings) writes: integer powers of two of
    24 and 31 (a float32's exact integers, an int32's indices) and ``*_MAX_RADIUS`` / ``*_fits``
    names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)
                and isinstance(node.left, ast.Constant) and type(node.left.value) is int and node.left.value == 2
                and isinstance(node.right, ast.Constant) and node.right.value in (24, 31)):
            found.append(f"line {node.lineno}: 2**{node.right.value}")
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            name = node.name
        if name and (name.endswith("MAX_RADIUS") or name.endswith("_fits")):
            found.append(f"line {node.lineno}: {name}")
    return found


def test_size_limits_live_in_the_kernel_contracts():
    """A kernel's limits are its row of ``KERNELS``: no other module repeats them (the pure-torch
    backend, ``ndimage/_torch``, has no kernel and picks its own index dtypes)."""
    assert size_limits(CONTRACTS), "the walk finds the contracts' own limits"
    torch_backend = PACKAGE / "ndimage" / "_torch"
    elsewhere = {str(path.relative_to(PACKAGE.parent)): size_limits(path) for path in PACKAGE.rglob("*.py")
                 if path != CONTRACTS and torch_backend not in path.parents}
    assert {path: found for path, found in elsewhere.items() if found} == {}
