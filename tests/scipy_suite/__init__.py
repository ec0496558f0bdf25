"""SciPy's own ndimage test suite, run against morphaug (a package, so that its conftest
does not shadow ``tests/conftest.py``, which test modules import as ``conftest``)."""
