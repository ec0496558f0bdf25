# Two entry points for a fresh machine (see README, Quickstart):
#   make demo   create .venv, install, run `python -m morphaug.demo`
#   make test   create .venv, install, build the native kernels, run the test suite
# This is the development build: where nvcc is found it compiles the CUDA kernels too
# (MORPHAUG_CUDA=1, sm_90 without a GPU), so that nvcc checks them and the suite reaches
# them on FakeTensor CUDA inputs; a user's pip install compiles them only for a visible
# GPU (morphaug/build). MORPHAUG_CUDA=0 make ... leaves them out.
# MORPHAUG_CUDA_EMULATION=1 (the default here) also builds morphaug._C_emu, the
# CUDA launchers compiled for the CPU emulator that the test suite runs.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
EXTRAS ?= test,demo,bench,monai,torchvision,kornia
PYTEST_ARGS ?=

export MORPHAUG_CUDA_EMULATION ?= 1
ifneq ($(shell command -v nvcc 2>/dev/null)$(wildcard /usr/local/cuda/bin/nvcc),)
export MORPHAUG_CUDA ?= 1
export TORCH_CUDA_ARCH_LIST ?= 9.0
endif

NATIVE_SOURCES := $(shell find csrc -type f 2>/dev/null) setup.py morphaug/build/__init__.py

.PHONY: install demo test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-run whenever pyproject.toml, setup.py, morphaug/build/ or a source under csrc/
# changes: the editable install rebuilds the native extension (ninja, in build/temp:
# only what changed).
$(VENV)/.installed: $(PY) pyproject.toml $(NATIVE_SOURCES)
	$(PIP) install torch==2.14.1 torchvision==0.29.1
	$(PIP) install "setuptools>=64" wheel ninja
	$(PIP) install --no-build-isolation -e ".[$(EXTRAS)]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) -m morphaug.demo

# The suite runs twice: on the native kernels (and the emulated CUDA launchers), then on the
# pure-torch backend that an install without native kernels runs (MORPHAUG_BACKEND=torch;
# tests/conftest.py: TORCH_LEG), on both cores.
test: install
	$(PY) -c "import morphaug; morphaug.backend_info()"
	$(PY) -m pytest $(PYTEST_ARGS)
	MORPHAUG_BACKEND=torch $(PY) -m pytest -n 2 $(PYTEST_ARGS)
	$(DOCS_BUILD)

# The docs site (docs/, Sphinx): `make docs` writes docs/_build/html; `make test` builds
# them too, warnings as errors (the docstring examples run as doctests in tests/test_docs.py).
# The docs extra is installed by an editable reinstall with every extra (only what changed rebuilds).
.PHONY: docs
DOCS_BUILD = $(PY) -m sphinx -W --keep-going -E -q -b html docs docs/_build/html
test: $(VENV)/.docs-installed
$(VENV)/.docs-installed: $(VENV)/.installed
	$(PIP) install --no-build-isolation -e ".[$(EXTRAS),docs]"
	touch $@
docs: $(VENV)/.docs-installed
	$(DOCS_BUILD)

bench: install
	$(PY) benchmarks/run.py

clean:
	rm -rf build $(VENV) morphaug/_C*.so *.egg-info
	rm -rf docs/_build docs/generated docs/notebooks docs/results docs/jupyter_execute
