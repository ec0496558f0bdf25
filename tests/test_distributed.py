"""morphaug under DistributedDataParallel: two CPU ranks (gloo), one training step each.

Scale-out is PyTorch's own: each rank augments its own collated batch with
its own generators, and only DDP communicates. ``run_ranks`` spawns two
ranks once for the module; each rank runs the augmentation pipeline inside a
DDP training step, runs it again from the same seeds, and saves what it saw.
The tests then check, on the saved results:

* the ranks draw different parameters (from identical inputs);
* each rank's draw is reproducible from its seeds (parameters and outputs);
* the transforms make no collective call, seen both at the Python API and by
  the process group's own sequence number (with a control call that both
  counters do see);
* DDP all-reduces the gradients: the ranks' local gradients differ, and after
  the optimizer step their models are equal (and have changed).
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import os
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

from morphaug.transforms import (
    DistanceMap,
    FillHoles,
    RandBoundaryJitter,
    RandGreyMorphology,
    RandLabelMorphology,
)

# Under `pytest -n 2 --dist loadgroup` the module runs on one worker: the ranks are spawned once.
pytestmark = [
    pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                       reason="needs torch.distributed with the gloo backend, which this torch build lacks"),
    pytest.mark.xdist_group("test_distributed"),
]

WORLD_SIZE = 2
BASE_SEED = 1234
TIMEOUT_S = 120  # the whole spawn; a hung rank fails the tests instead of hanging the suite
COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=60)

# The public torch.distributed calls that communicate.
COLLECTIVES = (
    "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_reduce_coalesced",
    "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "gather", "gather_object", "irecv", "isend", "monitored_barrier", "recv", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
)


# --------------------------------------------------------------------------- the rank's work
def make_pipeline(rank: int) -> list:
    """The augmentation pipeline of ``rank``: each random transform has its own generator,
    seeded from the base seed, the rank and the transform's position."""
    def generator(position: int) -> torch.Generator:
        return torch.Generator().manual_seed(BASE_SEED + 1000 * rank + position)

    return [
        RandLabelMorphology("label", num_classes=3, radius=(1, 2), prob=0.8, generator=generator(0)),
        RandBoundaryJitter("label", num_classes=3, magnitude=(0.5, 2.0), prob=0.8, generator=generator(1)),
        FillHoles("label", num_classes=3),
        RandGreyMorphology("image", radius=(1, 2), prob=0.8, generator=generator(2)),
        DistanceMap("label", output_keys="sdf", signed=True, classes=[1, 2], num_classes=3),
    ]


def make_batch() -> dict:
    """A collated batch, the same on every rank, so that what differs between ranks is the draw."""
    label = torch.zeros(4, 1, 32, 32, dtype=torch.int64)
    label[:, :, 6:26, 6:26] = 1
    label[:, :, 12:20, 12:20] = 2
    image = label.float() + 0.3 * torch.rand(label.shape, generator=torch.Generator().manual_seed(0))
    return {"image": image, "label": label, "id": list(range(4))}


def augment(pipeline: list, batch: dict) -> tuple[dict, list]:
    """The pipeline's output and each transform's ``last_params``."""
    for transform in pipeline:
        batch = transform(batch)
    return batch, [transform.last_params for transform in pipeline]


@contextlib.contextmanager
def count_collectives():
    """Count the collective calls made inside the block.

    Every name of :data:`COLLECTIVES` is wrapped, in ``torch.distributed`` and
    in ``distributed_c10d`` (where the functions call each other); the key
    ``"sequence number"`` is the number of collectives the default process group
    ran, which also sees calls made from C++.
    """
    counts = collections.Counter()
    patched = []
    for module in (dist, dist.distributed_c10d):
        for name in COLLECTIVES:
            original = getattr(module, name, None)
            if original is None:
                continue

            def counting(*args, _name=name, _original=original, **kwargs):
                counts[_name] += 1
                return _original(*args, **kwargs)

            setattr(module, name, counting)
            patched.append((module, name, original))
    group = dist.group.WORLD
    start = group._get_sequence_number_for_group()
    try:
        yield counts
    finally:
        for module, name, original in patched:
            setattr(module, name, original)
        counts["sequence number"] = group._get_sequence_number_for_group() - start


def rank_main(rank: int, store_path: str, out_dir: str) -> None:
    """One rank: a DDP training step on its augmented batch, a replay from the same seeds."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank,
                            world_size=WORLD_SIZE, timeout=COLLECTIVE_TIMEOUT)
    try:
        # The default generator is seeded alike on every rank: a transform that ignored its
        # generator= would draw the same on every rank, and would not replay.
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Conv2d(1, 3, 3, padding=1))
        local_gradients = []

        def recording_allreduce(state, bucket):
            local_gradients.append(bucket.buffer().clone())  # this rank's own, before the all-reduce
            return allreduce_hook(None, bucket)

        model.register_comm_hook(None, recording_allreduce)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        before = [p.detach().clone() for p in model.parameters()]

        # the training step
        with count_collectives() as augmentation_calls:
            batch, params = augment(make_pipeline(rank), make_batch())
        with count_collectives() as step_calls:
            loss = F.cross_entropy(model(batch["image"]), batch["label"][:, 0])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        # the instrument's control: the same counters see one collective
        with count_collectives() as control_calls:
            dist.all_reduce(torch.zeros(1))

        replay_batch, replay_params = augment(make_pipeline(rank), make_batch())
        torch.save({
            "batch": batch, "params": params, "replay_batch": replay_batch, "replay_params": replay_params,
            "augmentation_calls": dict(augmentation_calls), "step_calls": dict(step_calls),
            "control_calls": dict(control_calls), "local_gradients": local_gradients,
            "before": before, "after": [p.detach().clone() for p in model.parameters()],
        }, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


# --------------------------------------------------------------------------- the parent
def spawn(fn, args: tuple, nprocs: int, timeout: float) -> None:
    """``mp.spawn`` with a deadline: a rank that raises or hangs fails the caller."""
    context = mp.start_processes(fn, args=args, nprocs=nprocs, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout
    try:
        while not context.join(timeout=max(deadline - time.monotonic(), 0.0)):  # raises if a rank failed
            if time.monotonic() >= deadline:
                pytest.fail(f"the ranks were still running after {timeout} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    """What each rank saved, indexed by rank."""
    out_dir = tmp_path_factory.mktemp("ddp")
    spawn(rank_main, args=(str(out_dir / "store"), str(out_dir)), nprocs=WORLD_SIZE, timeout=TIMEOUT_S)
    return [torch.load(out_dir / f"rank{rank}.pt") for rank in range(WORLD_SIZE)]


def same_params(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


def test_ranks_draw_different_parameters(ranks):
    pipeline = make_pipeline(0)
    random = [i for i, params in enumerate(ranks[0]["params"]) if params]
    assert [type(pipeline[i]).__name__ for i in random] == [
        "RandLabelMorphology", "RandBoundaryJitter", "RandGreyMorphology"]
    for i in random:
        assert not same_params(ranks[0]["params"][i], ranks[1]["params"][i]), (
            f"{type(pipeline[i]).__name__}: both ranks drew the same parameters")
    for key in ("image", "label", "sdf"):
        assert not torch.equal(ranks[0]["batch"][key], ranks[1]["batch"][key]), key


def test_each_rank_replays_its_draw_from_its_seeds(ranks):
    for rank, saved in enumerate(ranks):
        for i, (params, replay) in enumerate(zip(saved["params"], saved["replay_params"])):
            assert same_params(params, replay), f"rank {rank}, transform {i}: another draw from the same seed"
        assert saved["batch"].keys() == saved["replay_batch"].keys()
        assert saved["replay_batch"]["id"] == saved["batch"]["id"]
        for key in ("image", "label", "sdf"):
            assert torch.equal(saved["batch"][key], saved["replay_batch"][key]), f"rank {rank}, {key!r}"


def test_transforms_make_no_collective_call(ranks):
    for rank, saved in enumerate(ranks):
        assert saved["augmentation_calls"] == {"sequence number": 0}, f"rank {rank}"
        # the counters work: they see a collective made in their block
        assert saved["control_calls"] == {"all_reduce": 1, "sequence number": 1}, f"rank {rank}"


def test_ddp_all_reduces_the_gradients(ranks):
    for rank, saved in enumerate(ranks):
        assert saved["step_calls"].get("all_reduce", 0) == len(saved["local_gradients"]) >= 1, f"rank {rank}"
        assert saved["step_calls"]["sequence number"] == len(saved["local_gradients"]), f"rank {rank}"
    # the ranks' own gradients differ (their augmented batches do) ...
    assert not all(torch.equal(a, b) for a, b in zip(ranks[0]["local_gradients"], ranks[1]["local_gradients"]))
    # ... and after the step both models are the same, and not the initial one
    for before, after0, after1 in zip(ranks[0]["before"], ranks[0]["after"], ranks[1]["after"]):
        assert torch.equal(after0, after1)
        assert not torch.equal(before, after0)
