"""morphaug called from several Python threads, with 1 or 2 torch threads, against the same work
done by one thread.

Two workloads on one 1x1x64^3 volume, each a round of calls repeated:
  ndimage     grey_erosion(size=3), distance_transform_edt, binary_dilation (default cross)
  transforms  RandLabelMorphology, signed DistanceMap, LabelBoundary on a 3-class label map
on each backend (native kernels where built, then the pure-torch backend). The same number of
rounds runs either in sequence on the main thread or split over ``--callers`` Python threads
running at once. ``torch.set_num_threads`` is set for the whole process before each
configuration; it bounds torch's OpenMP pool and morphaug's native CPU helpers alike. The number
of rounds is chosen so that the sequential run takes about ``--seconds``.

Each configuration runs ``--runs`` times, interleaved (run 1 of every configuration, then run 2,
...), so a burst of load from other processes spreads over all of them. Prints one markdown table
per backend and workload: wall time per run, the median, the spread (min-max) and the median
relative to one thread doing the work with the process's default number of torch threads.

    python benchmarks/threads.py                            # both backends, both workloads
    python benchmarks/threads.py --backends auto --work ndimage
    python benchmarks/threads.py --busy 2                   # beside two busy processes (shared cores)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import threading
import time
from typing import Callable

import torch


def _load_average() -> str:
    try:
        return " / ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "n/a"


def _workload(name: str, size: int) -> Callable[[], None]:
    """One round of calls, on inputs shared (read-only) by every calling thread."""
    import morphaug.ndimage as mnd
    from morphaug.transforms import DistanceMap, LabelBoundary, RandLabelMorphology

    generator = torch.Generator().manual_seed(0)
    image = torch.rand(1, 1, size, size, size, generator=generator)
    if name == "ndimage":
        mask = image > 0.3

        def round_() -> None:
            mnd.grey_erosion(image, size=3)
            mnd.distance_transform_edt(mask)
            mnd.binary_dilation(mask)
        return round_

    label = torch.zeros(1, 1, size, size, size, dtype=torch.long)
    label[..., size // 4:3 * size // 4, size // 4:3 * size // 4, size // 4:3 * size // 4] = 1
    label[..., 3 * size // 8:5 * size // 8, 3 * size // 8:5 * size // 8, 3 * size // 8:5 * size // 8] = 2
    # no generator: each transform draws from torch's default generator, which threads may share
    augment = RandLabelMorphology("label", radius=(1, 2), prob=1.0, num_classes=3)
    distances = DistanceMap("label", output_keys="sdf", signed=True, classes=[1, 2], num_classes=3)
    boundary = LabelBoundary("label", output_keys="edge", num_classes=3)

    def round_() -> None:
        boundary(distances(augment({"label": label})))
    return round_


def _measure(round_: Callable[[], None], callers: int, runs: int, seconds: float) -> tuple[int, list, dict]:
    default_threads = torch.get_num_threads()
    round_()  # warm-up: kernels loaded, helper threads started, allocator settled
    # rounds from the median of 3 rounds on one torch thread (the setting least moved by load)
    torch.set_num_threads(1)
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        round_()
        samples.append(time.perf_counter() - start)
    torch.set_num_threads(default_threads)
    rounds = max(callers, round(seconds / max(statistics.median(samples), 1e-6) / callers) * callers)

    def sequential() -> None:
        for _ in range(rounds):
            round_()

    def threaded() -> None:
        errors = []

        def caller() -> None:
            try:
                for _ in range(rounds // callers):
                    round_()
            except BaseException as error:  # noqa: BLE001 - raised again on the main thread
                errors.append(error)

        threads = [threading.Thread(target=caller) for _ in range(callers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

    configurations = [("1 (sequential)", default_threads, sequential), ("1 (sequential)", 1, sequential),
                      (f"{callers} Python threads", default_threads, threaded),
                      (f"{callers} Python threads", 1, threaded)]
    if default_threads == 1:
        configurations = configurations[1::2]
    times = {(name, threads): [] for name, threads, _ in configurations}
    try:
        for _ in range(runs):
            for name, threads, fn in configurations:
                torch.set_num_threads(threads)
                round_()
                start = time.perf_counter()
                fn()
                times[(name, threads)].append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(default_threads)
    return rounds, configurations, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", choices=("auto", "torch"), default=["auto", "torch"],
                        help="MORPHAUG_BACKEND values (auto: native kernels where built)")
    parser.add_argument("--work", nargs="+", choices=("ndimage", "transforms"), default=["ndimage", "transforms"])
    parser.add_argument("--callers", type=int, default=4, help="Python threads calling morphaug (default 4)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0, help="about how long one sequential run takes")
    parser.add_argument("--size", type=int, default=64, help="edge of the 1x1xN^3 volume")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="run every table beside N busy processes (morphaug.demo.busy_processes: "
                             "each a torch matrix product on 2 threads), as on shared cores")
    args = parser.parse_args()

    from morphaug import _ops

    native, why_not = _ops.load_native()
    default_threads = torch.get_num_threads()
    print(f"morphaug from Python threads: {platform.node()} ({platform.machine()}, {os.cpu_count()} cores), "
          f"torch {torch.__version__}, {default_threads} torch threads by default, native kernels "
          + ("loaded" if native else f"not loaded ({why_not})"))
    print(f"{args.runs} runs of each configuration, interleaved; spread = min-max over the runs; "
          f"ratio = median / median of the sequential run with {default_threads} torch threads"
          + (f"; beside {args.busy} busy processes" if args.busy else ""))
    with contextlib.ExitStack() as stack:
        if args.busy:
            from morphaug.demo import busy_processes
            stack.enter_context(busy_processes(args.busy))
        _tables(args, native)


def _tables(args: argparse.Namespace, native) -> None:
    for backend in args.backends:
        os.environ["MORPHAUG_BACKEND"] = backend
        for work in args.work:
            round_ = _workload(work, args.size)
            load_before = _load_average()
            rounds, configurations, times = _measure(round_, args.callers, args.runs, args.seconds)
            load_after = _load_average()
            label = "native kernels" if backend == "auto" and native else "pure-torch backend"
            print()
            busy = f", beside {args.busy} busy processes" if args.busy else ""
            print(f"### {work}, {label}{busy}: {rounds} rounds on 1x1x{args.size}^3 "
                  f"(load average 1 / 5 / 15 min before {load_before}, after {load_after})")
            print()
            reference = statistics.median(times[(configurations[0][0], configurations[0][1])])
            print("| calling threads | torch threads | " + " | ".join(f"run {i + 1} (s)" for i in range(args.runs))
                  + " | median (s) | spread (s) | ratio |")
            print("|---|---:|" + "---:|" * args.runs + "---:|---:|---:|")
            for name, threads, _ in configurations:
                values = times[(name, threads)]
                median = statistics.median(values)
                print(f"| {name} | {threads} | " + " | ".join(f"{value:.2f}" for value in values)
                      + f" | {median:.2f} | {min(values):.2f}-{max(values):.2f} | {median / reference:.2f}x |")


if __name__ == "__main__":
    main()
