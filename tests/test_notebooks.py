"""Execute every notebook in ``notebooks/`` top to bottom, and check the committed files.

Each notebook runs in a fresh IPython kernel started with this interpreter
(``sys.executable``): a kernelspec is written to a temporary directory and
looked up there only, so the test needs nothing but the virtual environment
(no ``jupyter kernelspec install``, no user-level kernels). A notebook fails on
any cell error, when it runs past its time budget, or when one of its
matplotlib figures lacks a title or axis labels. The committed notebooks must
have no outputs (they are stripped before committing).

A notebook lists the optional packages it needs in its metadata
(``metadata["morphaug"]["requires"]``); it is skipped, naming them, when one
is missing. Set ``MORPHAUG_NOTEBOOK_TIMEOUT`` (seconds, default 300) to change
the per-notebook budget.

Kernels run with ``OMP_NUM_THREADS=1`` unless it is already set: the test
suite may run notebooks next to other workers (pytest-xdist), and torch's
intra-op thread pool on an oversubscribed CPU turns the notebooks' many small
ops into erratic, many-times-slower calls. The notebooks' timing tables
print the thread count they ran with.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("jupyter_client")
pytest.importorskip("matplotlib")

from nbclient.exceptions import CellTimeoutError  # noqa: E402

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
TIMEOUT_S = float(os.environ.get("MORPHAUG_NOTEBOOK_TIMEOUT", "300"))
KERNEL_NAME = "morphaug-test-python"
REPORT_TAG = "MORPHAUG_FIGURE_REPORT "

# Injected first: check matplotlib figures whenever they are closed (the
# inline backend closes every figure after the cell that drew it) and collect
# the problems; the last injected cell checks the figures still open and
# prints a report. Rules: every visible axes (colorbars aside) has a title,
# axes that show their axis have x and y labels, and a figure with several
# panels has a suptitle.
CHECK_ON_CLOSE = """\
import matplotlib.pyplot as _plt

_figure_problems, _figures_seen = set(), set()

def _check_figure(fig):
    _figures_seen.add(id(fig))
    axes = [a for a in fig.axes if a.get_visible() and a.get_label() != "<colorbar>"]
    suptitle = fig._suptitle.get_text().strip() if fig._suptitle is not None else ""
    name = f"figure {fig.number} ({suptitle!r})"
    if len(axes) > 1 and not suptitle:
        _figure_problems.add(f"{name}: {len(axes)} panels but no suptitle")
    for i, ax in enumerate(axes):
        title = " ".join(ax.get_title(loc).strip() for loc in ("left", "center", "right")).strip()
        if not title:
            _figure_problems.add(f"{name}, panel {i}: no title")
        if ax.axison and not (ax.get_xlabel().strip() and ax.get_ylabel().strip()):
            _figure_problems.add(f"{name}, panel {i} ({title!r}): axis shown without x and y labels")

def _check_open_figures():
    for num in _plt.get_fignums():
        _check_figure(_plt.figure(num))

_close = _plt.close

def _checked_close(fig=None):
    _check_open_figures()
    return _close(fig)

_plt.close = _checked_close
"""

CHECK_FIGURES = f"""\
import json as _json
_check_open_figures()
print({REPORT_TAG!r} + _json.dumps({{"figures": len(_figures_seen), "problems": sorted(_figure_problems)}}))
_close("all")
"""


@pytest.fixture(scope="session")
def kernel_dir(tmp_path_factory) -> Path:
    """A kernelspec for ``sys.executable`` in a temporary prefix; returns its ``kernels`` dir."""
    from ipykernel.kernelspec import install

    prefix = tmp_path_factory.mktemp("jupyter")
    install(kernel_name=KERNEL_NAME, prefix=str(prefix), display_name="morphaug tests")
    kernels = prefix / "share" / "jupyter" / "kernels"
    spec = json.loads((kernels / KERNEL_NAME / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable, spec["argv"]
    return kernels


def _kernel_manager(kernel_dir: Path):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    specs = KernelSpecManager(kernel_dirs=[str(kernel_dir)], ensure_native_kernel=False)
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)


def _requirements(nb) -> list[str]:
    return list(nb.metadata.get("morphaug", {}).get("requires", []))


def _has_figures(nb) -> bool:
    return any(cell.cell_type == "code" and "plt." in cell.source for cell in nb.cells)


def _figure_report(cell) -> dict:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            for line in output.get("text", "").splitlines():
                if line.startswith(REPORT_TAG):
                    return json.loads(line[len(REPORT_TAG):])
    raise AssertionError(f"figure check produced no report; outputs: {cell.get('outputs')}")


def test_notebooks_exist():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_has_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: code cells {dirty} have outputs or execution counts; strip them"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_dir):
    nb = nbformat.read(path, as_version=4)
    missing = [name for name in _requirements(nb) if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"{path.name} needs {', '.join(missing)}")

    plots = _has_figures(nb)
    nb.cells.insert(0, nbformat.v4.new_code_cell(CHECK_ON_CLOSE))
    nb.cells.append(nbformat.v4.new_code_cell(CHECK_FIGURES))
    deadline = time.monotonic() + TIMEOUT_S

    def remaining(cell) -> int:
        # Each cell may use what is left of the notebook's budget.
        return max(1, int(deadline - time.monotonic()))

    client = nbclient.NotebookClient(
        nb,
        km=_kernel_manager(kernel_dir),
        timeout_func=remaining,
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    start = time.monotonic()
    try:
        client.execute(env=env)
    except CellTimeoutError as error:
        pytest.fail(f"{path.name} ran past its {TIMEOUT_S:.0f} s budget: {error}")
    elapsed = time.monotonic() - start
    assert elapsed <= TIMEOUT_S, f"{path.name} took {elapsed:.0f} s (budget {TIMEOUT_S:.0f} s)"

    report = _figure_report(nb.cells[-1])
    assert not report["problems"], f"{path.name}: " + "; ".join(report["problems"])
    if plots:
        assert report["figures"] > 0, f"{path.name} plots but left no figure to check"
