"""The demo: its phantom, its SciPy parity on every step, its table and its figure."""

from __future__ import annotations

import subprocess
import sys

import pytest
import scipy.ndimage as ndi
import torch

from morphaug import demo

OPS = [
    "binary_fill_holes, per class",
    "binary_opening, ball r=1",
    "binary_closing, ball r=1",
    "signed distance (2x distance_transform_edt)",
    "distance_transform_cdt chessboard",
    "morphological_gradient on labels, size=3",
    "grey_opening of image, ball r=1",
]
# Float steps: EDT in float32 against SciPy's float64 (relative 1e-6 of distances
# up to the volume diagonal), grey ops within 1e-6.
TOLERANCE = {"signed distance (2x distance_transform_edt)": 1e-4, "grey_opening of image, ball r=1": 1e-6}


def parse_table(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] in OPS:
            rows[cells[0]] = cells[1:]
    return rows


def test_phantom_is_seeded_and_has_classes_and_holes():
    labels, image = demo.make_phantom(3, 24, seed=1)
    again, image_again = demo.make_phantom(3, 24, seed=1)
    other, _ = demo.make_phantom(3, 24, seed=2)
    assert torch.equal(labels, again) and torch.equal(image, image_again)
    assert not torch.equal(labels, other)
    assert labels.shape == image.shape == (3, 1, 24, 24, 24)
    assert labels.dtype == torch.int64 and image.dtype == torch.float32
    assert set(labels.unique().tolist()) == {0, 1, 2, 3}
    assert not torch.equal(labels[0], labels[1])
    foreground = (labels[0, 0] > 0).numpy()
    assert (ndi.binary_fill_holes(foreground) & ~foreground).sum() > 0


def test_main_prints_the_table_and_writes_the_figure(tmp_path, capsys):
    status = demo.main(["--device", "cpu", "--size", "16", "--batch", "2", "--out", str(tmp_path)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "| op | morphaug ms | SciPy ms | speed-up | max abs diff |" in printed
    rows = parse_table(printed)
    assert list(rows) == OPS
    for op, (ours_ms, scipy_ms, speedup, diff) in rows.items():
        assert float(ours_ms) >= 0 and float(scipy_ms) >= 0 and speedup.endswith("x")
        assert float(diff) <= TOLERANCE.get(op, 0.0), (op, diff)
    assert parse_table((tmp_path / "morphaug_demo.md").read_text()) == rows
    png = (tmp_path / "morphaug_demo.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(png) > 20_000


def test_run_demo_matches_scipy_on_device(device, tmp_path):
    rows, figure = demo.run_demo(device, tmp_path / "out", size=12, batch=3, seed=4)
    assert [row.op for row in rows] == OPS
    for row in rows:
        assert row.max_abs_diff <= TOLERANCE.get(row.op, 0.0), (row.op, row.max_abs_diff)
        assert row.ours_ms > 0 and row.scipy_ms > 0
    assert figure.exists()


@pytest.mark.parametrize("argv, message", [
    (["--size", "4"], "--size"),
    (["--batch", "0"], "--batch"),
    (["--busy", "-1"], "--busy"),
    (["--device", "tpu"], "--device"),
])
def test_main_rejects_bad_arguments(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit):
        demo.main(argv + ["--out", str(tmp_path)])
    assert message in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available")
def test_main_rejects_cuda_without_cuda(capsys, tmp_path):
    with pytest.raises(SystemExit):
        demo.main(["--device", "cuda", "--out", str(tmp_path)])
    assert "CUDA is not available" in capsys.readouterr().err


def test_missing_extras_give_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SystemExit, match=r"pip install scipy matplotlib"):
        demo.run_demo(torch.device("cpu"), tmp_path, size=8, batch=1)


def test_module_runs_as_a_script():
    done = subprocess.run([sys.executable, "-m", "morphaug.demo", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert "--device" in done.stdout and "--out" in done.stdout


def test_main_times_the_steps_again_beside_busy_processes(tmp_path, capsys):
    status = demo.main(["--device", "cpu", "--size", "12", "--batch", "1", "--busy", "1", "--out", str(tmp_path)])
    assert status == 0
    quiet, busy = capsys.readouterr().out.split("beside 1 busy processes")
    assert list(parse_table(quiet)) == OPS and list(parse_table(busy)) == OPS
    assert (tmp_path / "busy" / "morphaug_demo.md").exists()


def test_label_panels_colour_the_classes_present(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: figures.append(fig) or close(fig))
    labels, _ = demo.make_phantom(2, 12, seed=4)
    demo.run_demo(torch.device("cpu"), tmp_path, size=12, batch=2, seed=4)
    (figure,) = figures
    panels = {ax.get_title(): ax for ax in figure.axes if ax.get_title()}
    classes = list(range(int(labels.max()) + 1))
    assert classes == [0, 1, 2, 3]
    for title in ("(c) labels, input", "(d) labels, filled/opened/closed"):
        (image,) = panels[title].images
        assert image.cmap.N == len(classes), title
        assert (image.norm.vmin, image.norm.vmax) == (-0.5, classes[-1] + 0.5), title
        assert list(image.colorbar.get_ticks()) == classes, title
