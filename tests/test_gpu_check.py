"""scripts/gpu_check.sh cannot rot: its dry run (the same stages on the CPU, through the emulator of the
CUDA launchers, small sizes) passes here, and what needs a GPU is skipped with its reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from morphaug import _ops

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(_ops.load_emulation()[0] is None, reason="morphaug._C_emu is not built (the dry run needs it)")
def test_the_dry_run_passes_and_reports(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path)}
    env.pop("MORPHAUG_BACKEND", None)  # the script checks the native kernels, in make test's torch leg too
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    stages = report["stages"]
    assert report["dry_run"] and not report["failed"]
    assert list(stages) == ["versions", "tests", "sanitizer", "sync_debug", "timings", "peers", "adversarial",
                            "edt_float64", "huge"]
    assert {name for name, stage in stages.items() if stage["status"] == "skipped"} == {
        "sanitizer", "sync_debug", "huge"}
    assert all("GPU" in stages[name]["reason"] for name in ("sanitizer", "sync_debug", "huge"))
    assert "| timings | pass |" in (tmp_path / "gpu_check.md").read_text()


def test_a_mismatch_fails_the_run(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_check

    report = gpu_check.Report(tmp_path, dry_run=True)
    report.run("adversarial", lambda: {"failures": ["snake label: 3 values differ from SciPy"]})
    report.run("huge", lambda: (_ for _ in ()).throw(gpu_check.Skip("needs a GPU")))
    assert report.failed
    assert json.loads((tmp_path / "gpu_check.json").read_text())["stages"]["huge"]["status"] == "skipped"
