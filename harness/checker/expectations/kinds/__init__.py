"""The built-in expectation kinds, one module each (harness/checker/expectations/kind.py)."""
