"""The README's first example runs as pasted, in a fresh process, and prints what it says: the
held-out R² of a Lasso on make_regression data (checked against scikit-learn's Lasso on the
same split), its nonzero coefficients and the history's one-line summary."""
import re
import subprocess
import sys
from pathlib import Path

from sklearn.datasets import make_regression
from sklearn.linear_model import Lasso as SklearnLasso
from sklearn.model_selection import train_test_split

README = Path(__file__).resolve().parent.parent / "README.md"


def first_example():
    """The first ``python`` code block of the README."""
    return re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)


def test_the_first_example_runs_and_matches_scikit_learn():
    code = first_example()
    assert "make_regression" in code and len(code.splitlines()) <= 15
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    r2 = float(re.search(r"R² on held-out rows: ([0-9.]+)", out).group(1))
    X, y = make_regression(n_samples=2000, n_features=500, n_informative=10, noise=1.0,
                           random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    reference = SklearnLasso(alpha=1.0, tol=1e-8).fit(X_train, y_train)
    assert abs(r2 - reference.score(X_test, y_test)) < 1e-3
    nonzero = int(re.search(r"(\d+) nonzero coefficients of 500", out).group(1))
    assert nonzero == (reference.coef_ != 0).sum()
    assert re.search(r"^<History: \d+ records \| rounds \d+ .*last objective", out, re.M)


def test_the_quickstart_is_two_commands():
    quickstart = README.read_text().split("## Quickstart")[1].split("\n## ")[0]
    commands = [line.strip() for line in quickstart.splitlines() if line.startswith("    ")]
    assert commands == ["pip install . && python examples/lasso_demo.py",
                        'pip install ".[test]" && python -m pytest']
