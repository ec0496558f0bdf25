"""MONAI's own tests of the transforms that ``morphaug.adapters.monai`` mirrors, run against morphaug (a
package, so that its conftest does not shadow ``tests/conftest.py``)."""
