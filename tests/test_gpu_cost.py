"""benchmarks/gpu_cost.py counts each public call's CUDA costs on the CPU (FakeTensor cuda): every call
documented as sync-free makes no sync and no blocking host-to-device copy, and the others only the reads
they document."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from morphaug import _sync

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu_cost  # noqa: E402

# Under `pytest -n 2 --dist loadgroup` the module runs on one worker: the table is taken once.
pytestmark = pytest.mark.xdist_group("test_gpu_cost")


@pytest.fixture(scope="module")
def table():
    with pytest.MonkeyPatch.context() as patch:  # the kernels a CUDA build chooses, in make test's torch leg too
        patch.setenv("MORPHAUG_BACKEND", "auto")
        return gpu_cost.rows(size=8)


def test_every_call_is_sync_free_but_for_documented_reads(table):
    assert len(table) == len(gpu_cost.CALLS)
    bad = [(row["call"], row["syncs"], row["error"]) for row in table if row["syncs"] or row["error"]]
    assert not bad, bad
    assert not [row["call"] for row in table if row["h2d"]]
    for row, entry in zip(table, gpu_cost.CALLS):
        assert set(row["reads"]) <= set(_sync.READS)
        if gpu_cost.cuda_build():  # the torch backend makes other reads (fixpoints) than the kernels
            assert set(row["reads"]) == set(entry.reads), row["call"]


def test_native_kernels_are_reached_on_a_cuda_build(table):
    if not gpu_cost.cuda_build():
        pytest.skip("morphaug._C has no CUDA kernels here")
    assert [row["call"] for row in table if row["fallback"]] == []


def test_the_table_prints(capsys):
    assert gpu_cost.main(["--fast"]) == 0
    assert "| call | native launches |" in capsys.readouterr().out
