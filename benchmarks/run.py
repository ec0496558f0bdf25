"""Side-by-side benchmarks: morphaug against the tools users use instead.

    python benchmarks/run.py [--suite ndimage,transforms,ot,metrics,morphology,per_sample,peers,segmentation,monai]
                             [--device cpu,cuda] [--quick] [--busy N]

Prints a markdown table of speed-ups (reference time / morphaug time, > 1 means
morphaug is faster) and writes it to ``benchmarks/results/<host>-<date>.md``.

``--busy N`` runs the CPU suites a second time beside N busy processes
(``morphaug.demo.busy_processes``: each a torch process multiplying matrices
on 2 threads, as a DataLoader worker or another job would), and reports those
rows (device ``cpu, N busy``) below the quiet ones: morphaug and its
reference share the cores alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib
import platform
import socket
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _timing import format_table  # noqa: E402

from morphaug.demo import busy_processes  # noqa: E402

SUITES = ["ndimage", "transforms", "ot", "metrics", "morphology", "per_sample", "peers", "segmentation", "monai"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default=",".join(SUITES), help="comma-separated suites")
    default_devices = "cpu,cuda" if torch.cuda.is_available() else "cpu"
    parser.add_argument("--device", default=default_devices, help="comma-separated devices")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--no-write", action="store_true", help="do not write benchmarks/results/")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="also run the CPU suites beside N busy processes")
    args = parser.parse_args(argv)
    if args.busy < 0:
        parser.error(f"--busy must be >= 0, got {args.busy}")

    suites = []
    for name in args.suite.split(","):
        try:
            suites.append(importlib.import_module(f"bench_{name}"))
        except ModuleNotFoundError as error:
            if error.name != f"bench_{name}":
                raise
            print(f"suite {name!r} not available", file=sys.stderr)
    rows = [row for suite in suites for device in args.device.split(",")
            for row in suite.run(torch.device(device), quick=args.quick)]
    if args.busy and "cpu" in args.device.split(","):
        with busy_processes(args.busy):
            for suite in suites:
                for row in suite.run(torch.device("cpu"), quick=args.quick):
                    rows.append(dataclasses.replace(row, device=f"cpu, {args.busy} busy"))

    header = (
        f"morphaug benchmarks on {socket.gethostname()} ({platform.processor() or platform.machine()}, "
        f"{torch.get_num_threads()} torch threads"
        + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else "")
        + f"), torch {torch.__version__}, {datetime.date.today().isoformat()}\n"
        "speed-up = reference time / morphaug time (higher is better)\n"
    )
    table = format_table(rows)
    print(header)
    print(table)
    if not args.no_write and not args.quick:
        results = HERE / "results"
        results.mkdir(exist_ok=True)
        path = results / f"{socket.gethostname()}-{datetime.date.today().isoformat()}.md"
        path.write_text(header + "\n" + table + "\n")
        print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
