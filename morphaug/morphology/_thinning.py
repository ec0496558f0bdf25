"""The 2-D parallel thinnings of scikit-image on whole batches: skeletonize "zhang" and thin (Guo-Hall).

Both algorithms delete, in each sub-iteration, every foreground pixel whose 8-neighbourhood code
the sub-iteration's table marks, all at once (parallel), with pixels outside the image read as
background. Every ``(b, c)`` slice runs its own sequence; a slice that has converged is left
unchanged by further iterations (only deletions happen, and an iteration that deletes nothing
leaves a fixpoint), so the batch iterates until its slowest slice converges.

Two backends, chosen by a dispatch table per op: the native ``thinning2d`` kernel (on the CPU each
slice to its fixpoint inside the kernel; on CUDA :data:`CHUNK` iterations per call), and torch
(codes by shifted sums of a zero-padded copy, a table lookup per sub-iteration). Whether the last
chunk of iterations deleted anything is read on the host (``morphaug._sync``, "binary fixpoint"):
every iteration on the CPU, where reading is free, every :data:`CHUNK` iterations on an
accelerator. The tables are built here, in the kernel's bit order (csrc/core/thinning2d.h).
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from .. import _ops, _sync

__all__ = ["CHUNK", "zhang", "guo_hall"]

#: Iterations run between two convergence reads on an accelerator.
CHUNK = 8

# The 3 x 3 offsets in the order of the bits of a neighbourhood code: skimage's _fast_skeletonize
# (Zhang; NW, N, NE, E, SE, S, SW, W: 1, 2, ..., 128), the order of the native kernel.
_CODE_OFFSETS = ((-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1))
# The order of skimage's Guo-Hall tables: its thin correlates with [[8, 4, 2], [16, 0, 1], [32, 64, 128]].
_GUO_HALL_OFFSETS = ((0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1), (1, 0), (1, 1))

# scikit-image's Zhang-Suen table (its _fast_skeletonize, BSD-3): the codes whose pixel is deleted
# in the first pass only (1), the second only (2) and in both (3).
_ZHANG_CODES = {
    1: (3, 6, 11, 12, 14, 131, 134, 143, 159, 161, 194, 198, 207, 227, 231, 243),
    2: (24, 26, 56, 62, 63, 96, 104, 108, 126, 176, 192, 224, 248, 249, 252),
    3: (7, 10, 15, 28, 30, 31, 40, 60, 112, 120, 124, 130, 135, 160, 193, 195, 199, 225, 240, 241),
}


def _zhang_tables() -> tuple[np.ndarray, np.ndarray]:
    first, second = np.zeros(256, bool), np.zeros(256, bool)
    first[list(_ZHANG_CODES[1] + _ZHANG_CODES[3])] = True
    second[list(_ZHANG_CODES[2] + _ZHANG_CODES[3])] = True
    return first, second


def _guo_hall_tables() -> tuple[np.ndarray, np.ndarray]:
    """The two deletion tables of Guo and Hall's algorithm A1 (1989) as skimage builds them: conditions
    G1 (one 8-connected neighbour run), G2 (2 <= min(N1, N2) <= 3) and G3 / G3' (per sub-iteration),
    bit ``i`` of a code being neighbour ``i`` of :data:`_GUO_HALL_OFFSETS`."""
    first, second = np.zeros(256, bool), np.zeros(256, bool)
    for code in range(256):
        x = [bool(code >> i & 1) for i in range(8)]
        g1 = sum(not x[i] and (x[i + 1] or x[(i + 2) % 8]) for i in (0, 2, 4, 6)) == 1
        n1 = sum(x[k] or x[k - 1] for k in (1, 3, 5, 7))
        n2 = sum(x[k] or x[(k + 1) % 8] for k in (1, 3, 5, 7))
        g2 = min(n1, n2) in (2, 3)
        first[code] = g1 and g2 and not ((x[1] or x[2] or not x[7]) and x[0])
        second[code] = g1 and g2 and not ((x[5] or x[6] or not x[3]) and x[4])
    return first, second


def _in_code_order(table: np.ndarray, offsets) -> np.ndarray:
    """``table`` (indexed by codes whose bit ``i`` is the neighbour at ``offsets[i]``) indexed by
    codes in :data:`_CODE_OFFSETS` order."""
    codes = np.arange(256)
    theirs = sum(((codes >> _CODE_OFFSETS.index(offset)) & 1) << i for i, offset in enumerate(offsets))
    return table[theirs]


#: Each algorithm's two tables, in code order.
_TABLES = {"zhang": _zhang_tables(),
           "guo_hall": tuple(_in_code_order(t, _GUO_HALL_OFFSETS) for t in _guo_hall_tables())}
#: The same as the native kernel takes them: 512 flags, sub-iteration 0's then 1's.
_FLAGS = {name: np.concatenate(tables).astype(int).tolist() for name, tables in _TABLES.items()}


def _chunk(device: torch.device) -> int:
    """Iterations between two convergence reads on ``device``."""
    return 1 if device.type == "cpu" else CHUNK


def _codes(padded: torch.Tensor) -> torch.Tensor:
    """The uint8 neighbourhood code of every interior pixel of ``padded`` (uint8 0/1, one pixel of
    zeros around each slice): a sum of shifted views, bit ``i`` from ``_CODE_OFFSETS[i]``."""
    height, width = padded.shape[-2] - 2, padded.shape[-1] - 2
    code = torch.zeros(padded.shape[:-2] + (height, width), dtype=torch.uint8, device=padded.device)
    for bit, (dy, dx) in enumerate(_CODE_OFFSETS):
        code |= padded[..., 1 + dy:1 + dy + height, 1 + dx:1 + dx + width] << bit
    return code


def _thin_torch(image: torch.Tensor, algorithm: str, max_iterations: int | None) -> torch.Tensor:
    """``image`` (bool ``(B, C, H, W)``) thinned by ``algorithm`` until no pass deletes a pixel,
    or ``max_iterations`` iterations (two passes each), in torch."""
    tables = [_sync.to_device(torch.from_numpy(table), image.device) for table in _TABLES[algorithm]]
    padded = torch.nn.functional.pad(image.to(torch.uint8), (1, 1, 1, 1))
    interior = padded[..., 1:-1, 1:-1]
    chunk = _chunk(image.device)
    done = 0
    while max_iterations is None or done < max_iterations:
        steps = chunk if max_iterations is None else min(chunk, max_iterations - done)
        before = interior.sum(dtype=torch.int64)
        for _, table in itertools.product(range(steps), tables):
            code = _codes(padded)  # clearing background pixels changes nothing
            interior &= ~table.index_select(0, code.flatten().int()).view(code.shape)
        done += steps
        if _sync.host_read((interior.sum(dtype=torch.int64) == before).view(1), "binary fixpoint")[0]:
            break
    return interior.bool()


def _thin_native(image: torch.Tensor, algorithm: str, max_iterations: int | None) -> torch.Tensor:
    """:func:`_thin_torch` on the native kernel: on the CPU one call (each slice to its fixpoint),
    on CUDA (and in its emulation) calls of :data:`CHUNK` iterations, the deleted count read after each."""
    # every iteration but the last deletes a pixel: no slice needs more than H * W + 1
    bound = max_iterations or image.shape[-2] * image.shape[-1] + 1
    chunk = bound if _ops.launcher_device(image) == "cpu" else CHUNK
    done = 0
    while True:
        steps = min(chunk, bound - done)
        image, deleted = _ops.kernels.thinning2d(image, _FLAGS[algorithm], steps)
        done += steps
        if done == bound or _sync.host_read((deleted == 0).view(1), "binary fixpoint")[0]:
            return image


def _table(op: str) -> _ops.Table:
    return _ops.Table(op, [_ops.Case("every input", "thinning2d", lambda image, algorithm, max_iterations: True,
                                     _thin_native)], _thin_torch)


_ZHANG = _table("skeletonize(method='zhang')")
_GUO_HALL = _table("thin")


def zhang(image: torch.Tensor) -> torch.Tensor:
    """skimage's 2-D ``skeletonize`` (Zhang and Suen) of every slice of ``image`` (bool ``(B, C, H, W)``)."""
    return _ZHANG(image, image, "zhang", None)


def guo_hall(image: torch.Tensor, max_iterations: int | None) -> torch.Tensor:
    """skimage's ``thin`` (Guo and Hall) of every slice of ``image`` (bool ``(B, C, H, W)``)."""
    return _GUO_HALL(image, image, "guo_hall", max_iterations)
