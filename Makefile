# Two entry points for a fresh machine (see README, Quickstart):
#   make demo   create .venv, install what the demo needs, run `python -m morphaug.demo`
#   make test   create .venv, install everything, build the native kernels, run the test suite
# `make demo` builds what runs on this machine: the C++ kernels, and the CUDA kernels
# only where a GPU is visible (morphaug/build decides, as for a user's pip install).
# `make test` is the development build: where nvcc is found it compiles the CUDA kernels
# too (MORPHAUG_CUDA=1, sm_90 without a GPU), so that nvcc checks them and the suite
# reaches them on FakeTensor CUDA inputs; MORPHAUG_CUDA=0 make test leaves them out.
# MORPHAUG_CUDA_EMULATION=1 (the default of make test) also builds morphaug._C_emu, the
# CUDA launchers compiled for the CPU emulator that the test suite runs.
# Both builds compile in build/temp, where ninja recompiles only what changed: a `make test`
# after a `make demo` adds the CUDA kernels and the emulator to the C++ objects already
# there, and a `make demo` after an up-to-date `make test` installs and builds nothing.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
EXTRAS ?= test,demo,bench,monai,torchvision,kornia,docs
DEMO_EXTRAS ?= demo
PYTEST_ARGS ?=

# The development build's settings (a value in the environment wins).
MORPHAUG_CUDA_EMULATION ?= 1
ifneq ($(shell command -v nvcc 2>/dev/null)$(wildcard /usr/local/cuda/bin/nvcc),)
MORPHAUG_CUDA ?= 1
TORCH_CUDA_ARCH_LIST ?= 9.0
endif
DEV_BUILD := MORPHAUG_CUDA_EMULATION=$(MORPHAUG_CUDA_EMULATION) $(if $(MORPHAUG_CUDA),MORPHAUG_CUDA=$(MORPHAUG_CUDA)) \
	$(if $(TORCH_CUDA_ARCH_LIST),TORCH_CUDA_ARCH_LIST="$(TORCH_CUDA_ARCH_LIST)")

NATIVE_SOURCES := $(shell find csrc -type f 2>/dev/null) setup.py morphaug/build/__init__.py
INSTALL_INPUTS := pyproject.toml $(NATIVE_SOURCES)

.PHONY: install demo test docs bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# The development install (make test), re-run whenever pyproject.toml, setup.py,
# morphaug/build/ or a source under csrc/ changes: the editable install rebuilds the
# native extensions (ninja, in build/temp: only what changed).
$(VENV)/.installed: $(PY) $(INSTALL_INPUTS)
	$(PIP) install torch==2.14.1 torchvision==0.29.1 "setuptools>=64" wheel ninja
	$(DEV_BUILD) $(PIP) install --no-build-isolation -e ".[$(EXTRAS)]"
	touch $@

# The demo's install: torch, the demo's extras and the kernels this machine runs (no
# emulator); nothing when the development install is up to date, which holds all of it.
# --no-compile: Python compiles the modules the demo imports when it first imports them,
# not all of torch's (20 s of a first run on this machine).
$(VENV)/.installed-demo: $(PY) $(INSTALL_INPUTS)
	@if [ -f $(VENV)/.installed ] && [ -z "$$(find $(INSTALL_INPUTS) -newer $(VENV)/.installed)" ]; then \
		echo "make demo: the development install (make test) is up to date"; \
	else \
		set -ex; \
		$(PIP) install --no-compile torch==2.14.1 "setuptools>=64" wheel ninja; \
		MORPHAUG_CUDA_EMULATION=0 $(PIP) install --no-compile --no-build-isolation -e ".[$(DEMO_EXTRAS)]"; \
	fi
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed-demo
	$(PY) -m morphaug.demo

# The suite runs twice: on the native kernels (and the emulated CUDA launchers), then on the
# pure-torch backend that an install without native kernels runs (MORPHAUG_BACKEND=torch;
# tests/conftest.py: TORCH_LEG), on both cores (modules marked xdist_group keep their costly
# fixture on one worker). The native leg stays serial: its kernels already use both cores, and
# -n 2 measured slower on this 2-core machine (137 s against 103-113 s on the big files).
test: install
	$(PY) -c "import morphaug; morphaug.backend_info()"
	$(PY) -m pytest $(PYTEST_ARGS)
	MORPHAUG_BACKEND=torch $(PY) -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)
	$(DOCS_BUILD)

# The docs site (docs/, Sphinx): `make docs` writes docs/_build/html; `make test` builds
# them too, warnings as errors (the docstring examples run as doctests in tests/test_docs.py).
DOCS_BUILD = $(PY) -m sphinx -W --keep-going -E -q -b html docs docs/_build/html

docs: install
	$(DOCS_BUILD)

bench: install
	$(PY) benchmarks/run.py

clean:
	rm -rf build $(VENV) morphaug/_C*.so *.egg-info
	rm -rf docs/_build docs/generated docs/notebooks docs/results docs/jupyter_execute
