"""Every notebook in examples/ executes without error in a fresh kernel (nbclient), so that the
stored notebooks never go stale; and each shows what it says it shows."""
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
#: What each notebook's outputs must contain (its point), beyond running without error.
SHOWS = {"lasso_path": ["image/png", "planted ones among them"],
         "lda_topics": ["topic 9:", "log_likelihood", "image/png"],
         "mf_recommendations": ["held_out_rmse", "user 1:", "image/png", "similar to Toy Story:",
                                "new user:", "precision@10 on held-out interactions:"],
         "cluster_dashboard": ["/strads", "compute_seconds", "('Lasso',)",
                               "blocks held per worker: [1, 1]"]}


def execute(path, timeout=300):
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return notebook


def outputs_text(notebook):
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            for kind, value in output.get("data", {}).items():
                parts.append(kind)
                parts.append(value if isinstance(value, str) else "")
    return "\n".join(parts)


def test_every_example_has_a_check():
    assert sorted(p.stem for p in NOTEBOOKS) == sorted(SHOWS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path):
    text = outputs_text(execute(path))
    for shown in SHOWS[path.stem]:
        assert shown in text, f"{path.name} no longer shows {shown!r}"


def test_the_examples_extra_is_what_the_notebooks_check_first():
    """setup.cfg's ``examples`` extra and ``check_example_requirements`` name the same
    packages, and every notebook's first code cell runs the check."""
    import configparser

    from dask_strads.datasets.examples import EXAMPLES_NEED

    setup = configparser.ConfigParser()
    setup.read(EXAMPLES.parent / "setup.cfg")
    extra = setup["options.extras_require"]["examples"].split()
    assert sorted(re.split(r"[<>=]", line)[0] for line in extra) == sorted(EXAMPLES_NEED)
    for path in NOTEBOOKS:
        first = next(c for c in nbformat.read(path, as_version=4).cells
                     if c.cell_type == "code")
        assert "check_example_requirements()" in first.source, path.name


def test_the_check_names_the_missing_package_and_the_install_command(monkeypatch):
    import importlib.util

    from dask_strads.datasets import check_example_requirements

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: None if name == "lda" else real(name))
    with pytest.raises(ImportError, match=r'need lda: pip install "dask_strads\[examples\]"'):
        check_example_requirements()
