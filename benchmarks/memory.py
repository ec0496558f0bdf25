"""Peak memory and time of the fixpoint ops and the EDT: morphaug's torch backend and
its default choice (native where built) against SciPy.

    python benchmarks/memory.py [--size 256] [--structure cross|asymmetric] [--op OP] [--library LIB]

The input is a serpentine maze (:func:`serpentine`): walls everywhere but one
corridor, one voxel wide, that visits every cell (odd coordinates) of the N^3
volume in boustrophedon order and opens to the border at one end: a single
path of about N^3 / 4 voxels, the longest a flood can be made to take.
``binary_fill_holes`` floods it from the border (it holds no hole);
``binary_propagation`` floods it from its open end, inside the corridor;
``distance_transform_edt`` measures every wall voxel's distance to the
corridor (its memory does not depend on the content).

``--structure asymmetric`` adds one corner (offset (-1, -1, -1)) to the
cross, an offset without its mirror: the torch backend's labelling follows
the cross both ways and the corner one way, the native flood fill follows
each offset the way it leads (and ``binary_fill_holes`` cannot label the
background with ``label``'s run scan).

Each (op, library) runs in a fresh process, after a warm-up on a tiny input:
the extra peak is the growth of the process's maximum resident set size over
the call (MiB, and bytes per voxel of the input; Linux, whose peak is reset
just before the call), the time that of the call. Heap reuse makes the peak
vary by some MiB from run to run; with ``MALLOC_MMAP_THRESHOLD_=131072`` in
the environment glibc maps every large block, and the peak is that of live
memory.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np

LIBRARIES = {"morphaug torch": {"MORPHAUG_BACKEND": "torch"}, "morphaug auto": {"MORPHAUG_BACKEND": "auto"},
             "scipy": {}}
OPS = ("binary_fill_holes", "binary_propagation", "distance_transform_edt")


def serpentine(n: int, ndim: int = 3) -> np.ndarray:
    """Walls (true) but one corridor through every odd cell of ``(n,) * ndim``, in
    boustrophedon order, open to the border at its start."""
    m = (n - 1) // 2
    index = np.arange(m ** ndim)
    cells, line = [], np.zeros_like(index)
    for k in range(ndim):  # digit k counts backwards on the odd lines of the digits before it
        digit = index // m ** (ndim - 1 - k) % m
        cells.append(np.where(line % 2 == 1, m - 1 - digit, digit))
        line = line * m + digit
    cells = 2 * np.stack(cells, 1) + 1
    walls = np.ones((n,) * ndim, bool)
    walls[tuple(cells.T)] = False
    walls[tuple(((cells[1:] + cells[:-1]) // 2).T)] = False  # the wall between consecutive cells
    walls[(0,) + tuple(cells[0, 1:])] = False  # the opening
    return walls


def structure(name: str, ndim: int = 3) -> np.ndarray:
    """The cross, or (``asymmetric``) the cross plus its corner at offset ``(-1,) * ndim``."""
    import scipy.ndimage as ndi

    element = ndi.generate_binary_structure(ndim, 1)
    if name == "asymmetric":
        element[(0,) * ndim] = True
    return element


def measure(library: str, op: str, size: int, element: str) -> tuple[float, float]:
    """``(seconds, extra peak resident MiB)`` of one call in this process."""
    walls = serpentine(size)
    seed = np.zeros_like(walls)
    seed[(0,) + (1,) * (walls.ndim - 1)] = True  # the opening
    x, kwargs = {"binary_fill_holes": (walls, {}), "binary_propagation": (seed, {"mask": ~walls}),
                 "distance_transform_edt": (walls, {})}[op]
    if library == "scipy":
        import scipy.ndimage as ndi

        function = getattr(ndi, op)
    else:
        import torch

        import morphaug.ndimage as mnd

        function = getattr(mnd, op)
        x, kwargs = torch.from_numpy(x)[None, None], {k: torch.from_numpy(v) for k, v in kwargs.items()}
    arguments = () if op == "distance_transform_edt" else (structure(element),)
    corner = (Ellipsis,) + (slice(8),) * walls.ndim
    function(x[corner], *arguments, **{k: v[corner] for k, v in kwargs.items()})  # warm-up
    with open("/proc/self/clear_refs", "w") as clear:  # the peak so far (the maze's own) is forgotten
        clear.write("5")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    function(x, *arguments, **kwargs)
    seconds = time.perf_counter() - start
    return seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024


def run(library: str, op: str, size: int, element: str) -> tuple[float, float]:
    """:func:`measure` in a fresh process."""
    output = subprocess.run([sys.executable, __file__, "--size", str(size), "--structure", element, "--op", op,
                             "--library", library, "--child"], env=dict(os.environ, **LIBRARIES[library]),
                            capture_output=True, text=True, check=True).stdout
    seconds, mib = output.split()[-2:]
    return float(seconds), float(mib)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--structure", choices=["cross", "asymmetric"], default="cross")
    parser.add_argument("--op", choices=OPS, action="append", help="default: all")
    parser.add_argument("--library", choices=list(LIBRARIES), action="append", help="default: all")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    ops, libraries = args.op or OPS, args.library or list(LIBRARIES)
    if args.child:
        print(*measure(libraries[0], ops[0], args.size, args.structure))
        return 0
    voxels = args.size ** 3
    for op in ops:
        cells = []
        for library in libraries:
            seconds, mib = run(library, op, args.size, args.structure)
            cells.append(f"{library} {seconds:.2f} s, {mib:.0f} MiB ({mib * 2 ** 20 / voxels:.1f} B/voxel)")
        element = "" if op == "distance_transform_edt" else f", {args.structure}"
        print(f"{op} 1x1x{args.size}^3 serpentine maze{element}: " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
