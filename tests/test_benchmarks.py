"""Smoke test: every benchmark suite runs end to end on tiny sizes.

``benchmarks/run.py`` runs in the test's process (:func:`run_benchmarks`): a fresh interpreter
would import torch, SciPy and MONAI again, most of each run's time.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NO_CV2 = pytest.mark.skipif(importlib.util.find_spec("cv2") is None, reason="opencv-python-headless not installed")
NO_MONAI = pytest.mark.skipif(importlib.util.find_spec("monai") is None, reason="the MONAI suite compares with MONAI")


def run_benchmarks(monkeypatch, capsys, *arguments: str) -> str:
    """``python benchmarks/run.py *arguments`` in this process: its output, once it returned 0."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # restored afterwards, run.py's own insert too
    spec = importlib.util.spec_from_file_location("benchmarks_run", ROOT / "benchmarks" / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    capsys.readouterr()
    assert run.main(list(arguments)) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("suite", ["ndimage", "transforms", "ot", "morphology", "per_sample",
                                   pytest.param("peers", marks=NO_CV2), "segmentation",
                                   pytest.param("monai", marks=NO_MONAI)])
def test_suite_runs_quick(suite, monkeypatch, capsys):
    output = run_benchmarks(monkeypatch, capsys, "--suite", suite, "--device", "cpu", "--quick", "--no-write")
    table = [line for line in output.splitlines() if line.startswith("| ")]
    assert len(table) >= 3, output  # header, separator, at least one row
    assert "nan" not in "\n".join(table[2:]).lower()


def test_busy_mode_reports_both_runs(monkeypatch, capsys):
    output = run_benchmarks(monkeypatch, capsys, "--suite", "per_sample", "--device", "cpu", "--quick", "--no-write",
                            "--busy", "1")
    rows = [line for line in output.splitlines() if line.startswith("| ") and "per sample" in line]
    assert rows and len(rows) == 2 * sum("| cpu |" in row for row in rows)  # each row quiet and busy
    assert sum("| cpu, 1 busy |" in row for row in rows) == len(rows) // 2


def test_memory_script_runs():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "memory.py"), "--size", "24", "--structure", "asymmetric"],
        capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.count("B/voxel") == 9, completed.stdout  # 3 ops, 3 libraries
