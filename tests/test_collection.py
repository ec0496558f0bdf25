"""The test suite collects where MONAI, Kornia and POT are missing (as on the GPU machine's image).

``scripts/gpu_check.sh`` runs pytest on an image without them: a test module that imports one
at module level without ``pytest.importorskip`` (or a guard) would stop the run with a collection
error. Here ``pytest --collect-only`` runs over tests/ in a subprocess whose ``PYTHONPATH`` starts
with stub packages named like them that raise ``ModuleNotFoundError`` on import.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = ("monai", "kornia", "ot")
#: The modules that test the frameworks' adapters only: skipped whole without them. Any other module
#: skips only its tests that compare with a hidden library.
ADAPTER_MODULES = {"tests/test_adapters_dtypes.py", "tests/test_adapters_kornia.py", "tests/test_adapters_monai.py",
                   "tests/test_adapters_monai_functions.py", "tests/test_adapters_skeleton_target.py",
                   "tests/test_adapters_signatures.py"}


def test_the_suite_collects_without_monai_kornia_and_pot(tmp_path):
    for name in HIDDEN:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r} (hidden by tests/test_collection.py)'!r}, "
            f"name={name!r})\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
    assert done.returncode in (0, 5), tail  # 5: nothing collected (not expected, but no error)
    assert "error" not in tail.lower(), tail
    assert "(hidden by tests/test_collection.py)" in tail  # the stubs were in effect
    skipped = {line.split()[2].split(":")[0] for line in tail.splitlines() if line.startswith("SKIPPED")}
    assert skipped <= ADAPTER_MODULES, f"whole modules skipped: {sorted(skipped - ADAPTER_MODULES)}"


def test_the_stubs_hide_the_packages(tmp_path):
    (tmp_path / "monai").mkdir()
    (tmp_path / "monai" / "__init__.py").write_text("raise ModuleNotFoundError('hidden', name='monai')\n")
    code = "import pytest\ntry:\n    pytest.importorskip('monai.data')\nexcept pytest.skip.Exception:\n    print('skipped')\n"
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])},
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "skipped", done.stderr


pytestmark = pytest.mark.filterwarnings("ignore")
