"""The code of the README and of the docs pages (``docs/*.md``) runs as written.

- Every ```python block (README and docs pages) runs on its own, in a fresh interpreter (``python -c``, as if pasted
  into a new REPL), on the CPU (``CUDA_VISIBLE_DEVICES=""``), with the installed morphaug.
  A block that raises fails the test, with its file, first line and the interpreter's output.
- ```bash blocks are not run, but every ``pip install`` in the README and the docs pages (in bash blocks, their
  comments and inline code) must name something that exists: the clone (``.``, with extras that
  pyproject.toml declares), the sdist that ``python -m build --sdist`` writes, or a distribution
  on PyPI that the install instructions rely on. morphaug itself is not on PyPI, so
  ``pip install morphaug[monai]`` fails here.
- The Quickstart keeps exactly its two commands.

Each python block takes a few seconds (most of it interpreter start-up and imports); keep the
examples small.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The README, then the docs pages (docs/*.md; the generated API pages are not among them).
PAGES = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
         for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

# Seconds one block may take before it counts as a failure (it should take a few).
BLOCK_TIMEOUT = 300


def _blocks(language: str, text: str = README) -> list[tuple[int, str]]:
    """(first line of the block's code in ``text``, code) of every fenced block in ``language``."""
    return [(text.count("\n", 0, match.start(2)) + 1, match.group(2))
            for match in FENCE.finditer(text) if match.group(1) == language]


PYTHON_BLOCKS = [(f"{page}:{line}", code) for page, text in PAGES.items() for line, code in _blocks("python", text)]


@pytest.mark.parametrize("line, code", PYTHON_BLOCKS, ids=[line for line, _ in PYTHON_BLOCKS])
def test_python_block_runs(line, code, tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    try:
        result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"the python block at {line} ran past {BLOCK_TIMEOUT} s:\n{error.stderr or ''}")
    assert result.returncode == 0, (
        f"the python block at {line} failed (exit {result.returncode}):\n"
        f"--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-8000:]}")


def test_readme_and_docs_have_python_blocks():
    # the extraction itself: a change of fence style must not leave the test above with nothing to run
    assert sum(line.startswith("README.md:") for line, _ in PYTHON_BLOCKS) >= 3
    assert sum(line.startswith("docs/") for line, _ in PYTHON_BLOCKS) >= 5


def test_quickstart_keeps_its_two_commands():
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = [code for language, code in FENCE.findall(quickstart) if language == "bash"]
    assert len(blocks) == 1
    commands = [line.split("#", 1)[0].strip() for line in blocks[0].splitlines()]
    assert [command for command in commands if command] == ["make demo", "make test"]


# ---------------------------------------------------------------------------------------------
# pip install lines

def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group(0)).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    return {_name(requirement) for requirement in requirements}


EXTRAS = set(PYPROJECT["project"].get("optional-dependencies", {}))
VERSION = PYPROJECT["project"]["version"]
SDIST = f"morphaug-{VERSION}.tar.gz"
# Distributions the README may install from PyPI: what morphaug depends on (extras included),
# what its build needs, and the tools the install section names (torch and ninja for the build,
# build for the sdist). morphaug itself is not on PyPI.
ON_PYPI = (_requirement_names(PYPROJECT["project"].get("dependencies", []))
           | {name for extra in PYPROJECT["project"].get("optional-dependencies", {}).values()
              for name in _requirement_names(extra)}
           | _requirement_names(PYPROJECT["build-system"]["requires"])
           | {"torch", "ninja", "wheel", "setuptools", "build"}) - {"morphaug"}
# pip options followed by a value (the value is not a requirement).
OPTIONS_WITH_VALUE = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint",
                      "-r", "--requirement", "-t", "--target", "--prefix", "--root", "--config-settings",
                      "-C", "--platform", "--python-version"}


def _pip_installs(text: str) -> list[str]:
    """The arguments of every ``pip install`` in ``text``: bash blocks (comments included) and
    inline code spans outside fenced blocks (a span may wrap over lines)."""
    pieces = [line for _, code in _blocks("bash", text) for line in code.splitlines()]
    pieces += [span.replace("\n", " ") for span in re.findall(r"`([^`]+)`", FENCE.sub("", text))]
    found = []
    for piece in pieces:
        for match in re.finditer(r"\bpip install\b([^#;&|`]*)", piece):
            found.append(match.group(1).strip())
    return found


def _problems(arguments: str) -> list[str]:
    """Why the arguments of one ``pip install`` cannot work as written (empty when they can)."""
    problems = []
    words = shlex.split(arguments)
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in OPTIONS_WITH_VALUE
            continue
        if "://" in word or word.startswith("git+"):
            problems.append(f"{word!r}: a URL; install from the clone with --no-build-isolation")
        elif word.startswith((".", "/")) or word.endswith((".tar.gz", ".whl")):
            path, _, extras = word.partition("[")
            if path.endswith(".tar.gz"):
                if Path(path).name != SDIST:
                    problems.append(f"{word!r}: `python -m build --sdist` writes {SDIST}")
            elif not (ROOT / path / "pyproject.toml").is_file():
                problems.append(f"{word!r}: no pyproject.toml there (the clone is '.')")
            unknown = {extra.strip() for extra in extras.rstrip("]").split(",") if extra.strip()} - EXTRAS
            if unknown:
                problems.append(f"{word!r}: pyproject.toml declares no extra {sorted(unknown)}")
        else:
            name = _name(word)
            if name == "morphaug":
                problems.append(f"{word!r}: morphaug is not on PyPI; install from the clone: "
                                f"pip install --no-build-isolation \".[monai]\"")
            elif name not in ON_PYPI:
                problems.append(f"{word!r}: not a distribution the install instructions rely on "
                                f"(add it to pyproject.toml or to ON_PYPI here if it is one)")
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_pip_install_lines_name_what_exists(page):
    installs = _pip_installs(PAGES[page])
    if page in ("README.md", "docs/install.md"):
        assert any("--no-build-isolation" in arguments for arguments in installs)
    problems = [f"pip install {arguments}: {problem}" for arguments in installs for problem in _problems(arguments)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("arguments", ["morphaug[monai]", "'morphaug[bench]'", "--no-build-isolation \".[nope]\"",
                                       "git+https://example.org/morphaug.git", "dist/morphaug-0.0.1.tar.gz",
                                       "--no-build-isolation ./nowhere", "not-a-dependency-of-morphaug"])
def test_pip_install_check_refuses(arguments):
    assert _problems(arguments)


@pytest.mark.parametrize("arguments", ["--no-build-isolation .", "--no-build-isolation \".[monai,kornia]\"",
                                       "torch --index-url https://download.pytorch.org/whl/cpu",
                                       "\"setuptools>=64\" wheel ninja", "monai",
                                       f"--no-build-isolation dist/{SDIST}"])
def test_pip_install_check_accepts(arguments):
    assert not _problems(arguments)
