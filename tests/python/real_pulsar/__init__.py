"""Tests against a real Apache Pulsar standalone (a package, so its conftest does not shadow tests/python/conftest.py)."""
