"""The README and docs/ quote no dates and no commit hashes: a figure comes with the command that
reproduces it and the conditions it ran under, and a version is named by what it changed, so the
docs stay true for a reader who has neither the calendar nor the repository's history.

A hex token is a commit hash if the repository's own history resolves it; without a ``.git`` (an
unpacked release) that cannot be told from other hex, and the hash check is skipped."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
# With a digit, so that words such as "defaced" are not looked up; all-digit tokens are, as git
# abbreviates some hashes to digits only (the history, not the pattern, decides).
HEX_TOKEN = re.compile(r"\b(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
HAS_GIT = (ROOT / ".git").exists() and shutil.which("git") is not None


def lines_matching(pattern):
    """(file:line, token) for every match of pattern in the docs."""
    return [(f"{path.relative_to(ROOT)}:{number}", match.group())
            for path in DOCS
            for number, line in enumerate(path.read_text().splitlines(), 1)
            for match in pattern.finditer(line)]


def is_commit(token):
    return subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{token}^{{commit}}"],
                          cwd=ROOT, capture_output=True).returncode == 0


def test_the_docs_are_found():
    assert ROOT / "README.md" in DOCS and len(DOCS) > 5


def test_the_patterns_find_what_they_are_for():
    assert ISO_DATE.findall("Run on 2026-11-30 (load average 2)") == ["2026-11-30"]
    assert HEX_TOKEN.findall("at d613505, 6631947, defaced, 10bf21d, 123456") == [
        "d613505", "6631947", "10bf21d"]


def test_no_dates():
    assert lines_matching(ISO_DATE) == []


@pytest.mark.skipif(not HAS_GIT, reason="no .git or no git: a commit hash cannot be told from "
                                        "other hex without the repository's history")
def test_no_commit_hashes():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert is_commit(head[:7]) and not is_commit("0000000")
    assert [(where, token) for where, token in lines_matching(HEX_TOKEN)
            if is_commit(token)] == []


def test_no_merge_conflict_markers():
    """A merge left unresolved shows both versions to the reader."""
    markers = re.compile(r"^(<{7}|={7}|>{7})( |$)")
    assert lines_matching(markers) == []
