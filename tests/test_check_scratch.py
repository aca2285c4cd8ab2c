"""A check's temporary folders (harness/checker/scratch.py): the folders a killed check left behind are removed by
the next check, a running check's are kept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.checker.scratch import scratch


def test_a_checks_folder_left_by_a_process_now_gone_is_removed_and_a_living_ones_kept():
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    root = Path(tempfile.gettempdir())
    left = root / f"harness-test-{int(gone.stdout)}-left"  # what a check killed mid-way leaves
    living = root / f"harness-test-{os.getpid()}-living"
    for folder in (left, living):
        (folder / "copy").mkdir(parents=True, exist_ok=True)
    try:
        with scratch("test") as folder:
            assert folder.is_dir() and folder.name.startswith(f"harness-test-{os.getpid()}-")
            assert not left.exists() and living.exists()
        assert not folder.exists()
    finally:
        for path in (left, living):
            shutil.rmtree(path, ignore_errors=True)
