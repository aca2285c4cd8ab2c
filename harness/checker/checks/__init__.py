"""Checks of one module each: a module here defining `KIND`, a harness.checker.step.Step with a `section`, is run
after the built-in steps (harness/checker/check.py) and its section is in every report."""
