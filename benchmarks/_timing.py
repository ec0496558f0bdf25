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
