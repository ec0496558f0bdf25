"""Timing helpers shared by the benchmark suites.

A suite module exposes ``run(device: torch.device, quick: bool) -> list[Row]``;
each row times morphaug and the tool a user would use instead, side by side,
in the same process.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch


@dataclass
class Row:
    case: str            # e.g. "grey_erosion size=3"
    shape: str           # e.g. "4x1x96^3 float32"
    device: str          # "cpu" or "cuda"
    ours_s: float        # morphaug median seconds per call
    reference: str       # e.g. "scipy.ndimage loop"
    reference_s: float   # reference median seconds per call (nan when unavailable)
    note: str = ""       # e.g. max abs difference, or why the reference is missing

    @property
    def ratio(self) -> float:
        return self.reference_s / self.ours_s


def synchronize(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timeit(fn, device="cpu", repeat: int = 3, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds, synchronising CUDA around each call."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(fn, device, quick: bool):
    """``(result of the first call, median seconds)``: of 3 calls, or of 11 after 7 more warm-up calls
    for calls of 0.1 s or less (the first calls of a process run while the allocator's and the
    kernel's page state settle, ``label`` on 4x1x96^3 at 8-10 ms for about 8 calls, then 4.5 ms; and
    the medians of 3 short calls swung by 1.3x between runs), or of 51 for calls of 1 ms or less
    (their medians need many), or of 1 call when the first took over 2 s or with ``quick`` (tiny
    sizes, a smoke test: its times are noise). The first call is the warm-up."""
    start = time.perf_counter()
    result = fn()
    synchronize(device)
    first = time.perf_counter() - start
    short = first <= 0.1
    repeat = 1 if quick or first > 2.0 else (51 if first <= 1e-3 else 11 if short else 3)
    warmup = 0 if quick or not short else 7
    return result, timeit(fn, device, repeat=repeat, warmup=warmup)


def format_table(rows: list[Row]) -> str:
    lines = [
        "| case | shape | device | morphaug (ms) | reference | reference (ms) | speed-up | note |",
        "|---|---|---|---:|---|---:|---:|---|",
    ]
    for row in rows:
        note = row.note.replace("|", "\\|")  # a pipe inside a cell would split it
        lines.append(
            f"| {row.case} | {row.shape} | {row.device} | {row.ours_s * 1e3:.1f} | {row.reference} "
            f"| {row.reference_s * 1e3:.1f} | {row.ratio:.2f}x | {note} |"
        )
    return "\n".join(lines)
