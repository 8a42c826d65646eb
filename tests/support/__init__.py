"""Test support: real services, a local HTTP target, managed subprocesses (see conftest.py)."""
