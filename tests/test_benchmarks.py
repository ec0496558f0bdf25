"""Smoke test: every benchmark suite runs end to end on tiny sizes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NO_CV2 = pytest.mark.skipif(importlib.util.find_spec("cv2") is None, reason="opencv-python-headless not installed")


@pytest.mark.parametrize("suite", ["ndimage", "transforms", "ot", "per_sample", pytest.param("peers", marks=NO_CV2)])
def test_suite_runs_quick(suite):
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--suite", suite, "--device", "cpu",
         "--quick", "--no-write"],
        capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    table = [line for line in completed.stdout.splitlines() if line.startswith("| ")]
    assert len(table) >= 3, completed.stdout  # header, separator, at least one row
    assert "nan" not in "\n".join(table[2:]).lower()


def test_busy_mode_reports_both_runs():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--suite", "per_sample", "--device", "cpu",
         "--quick", "--no-write", "--busy", "1"],
        capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    rows = [line for line in completed.stdout.splitlines() if line.startswith("| ") and "per sample" in line]
    assert rows and len(rows) == 2 * sum("| cpu |" in row for row in rows)  # each row quiet and busy
    assert sum("| cpu, 1 busy |" in row for row in rows) == len(rows) // 2


def test_memory_script_runs():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "memory.py"), "--size", "24", "--structure", "asymmetric"],
        capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.count("B/voxel") == 9, completed.stdout  # 3 ops, 3 libraries
