"""The engine and the program protocol type-check: mypy, configured in setup.cfg, finds no error
in ``dask_strads/engine/`` and ``dask_strads/programs/base.py`` (whose every function is
annotated), checking the bodies of unannotated functions too."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_mypy_finds_no_error_in_the_engine_and_the_program_protocol():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues found in" in done.stdout
