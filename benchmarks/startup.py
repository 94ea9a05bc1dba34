"""Start-up: what a fresh process pays before and for its first fit, beside scikit-learn's.

Each measurement runs in a fresh Python process (the numba cache warm, as after any first run),
``--repeats`` times, interleaved so that the machine's load falls on every variant alike;
medians are printed with ratios:

- ``import dask_strads`` and ``from dask_strads import Lasso``: CPU seconds of the import,
  after scikit-learn's (which every fit needs and a user's script has already paid);
- the first fit of a small Lasso in the process (loading the cached kernels), wall seconds;
- the first ``GridSearchCV(Lasso(), {"alpha": 3 values}, n_jobs=2).fit`` of a fresh process on a
  200 x 50 problem, imports included, wall seconds: scikit-learn's process and each of joblib's
  two worker processes pay the imports and the first fit, so this is what a user waits for
  the first time a search runs.

"numba floor" is scikit-learn's Lasso whose ``fit`` first calls one cached numba kernel
(``benchmarks/_numba_floor.py``): the start-up any package pays that jits its kernels with
numba, with none of our code, which tells how much of our start-up is ours.

``--before PATH``: also run a checkout of the package at PATH (a ``git worktree``), as
"before", to measure a change side by side.

Each checkout's package is byte-compiled first (``compileall``, into its ``__pycache__``), as an
installed package is: where ``PYTHONDONTWRITEBYTECODE`` is set, every fresh process would
otherwise compile the package's sources again, while scikit-learn's and numba's come compiled
with their installation.

Usage
  python benchmarks/startup.py [--repeats 5] [--before ../before] [--markdown]
"""
import compileall
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBLEM = """
from sklearn.datasets import make_regression
X, y = make_regression(n_samples=200, n_features=50, noise=1.0, random_state=0)
"""
#: name -> code printing the seconds measured; ``{lasso}`` is the Lasso's import.
MEASURED = {
    "import dask_strads, CPU s": """
import time, sklearn.linear_model
t = time.process_time()
import dask_strads
print(time.process_time() - t)""",
    "import the Lasso, CPU s": """
import time, sklearn.linear_model
t = time.process_time()
{lasso}
print(time.process_time() - t)""",
    "first fit in a process, wall s": PROBLEM + """
import time
{lasso}
t = time.perf_counter()
Lasso(alpha=0.1).fit(X, y)
print(time.perf_counter() - t)""",
    "first GridSearchCV(n_jobs=2), wall s": """
import time
t = time.perf_counter()
from sklearn.model_selection import GridSearchCV
{lasso}""" + PROBLEM + """
GridSearchCV(Lasso(), {{"alpha": [0.1, 1.0, 10.0]}}, n_jobs=2).fit(X, y)
print(time.perf_counter() - t)""",
}
OURS = "from dask_strads import Lasso"
SKLEARNS = "from sklearn.linear_model import Lasso"
NUMBA_FLOOR = "from _numba_floor import Lasso"
BENCHMARKS = os.path.dirname(os.path.abspath(__file__))


def seconds(code, checkout):
    """The seconds ``code`` prints, run in a fresh process importing the package from
    ``checkout``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([checkout, BENCHMARKS]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True, cwd=checkout)
    return float(done.stdout.split()[-1])


def main():
    args = arguments(__doc__, repeats=5, extra=[("--before", dict(default=None))])
    variants = {"dask_strads": (OURS, HERE)}
    if args.before:
        variants["dask_strads before"] = (OURS, os.path.abspath(args.before))
    variants["sklearn"] = (SKLEARNS, HERE)
    variants["numba floor"] = (NUMBA_FLOOR, HERE)
    seconds(MEASURED["first fit in a process, wall s"].format(lasso=NUMBA_FLOOR), HERE)  # caches
    for _, checkout in variants.values():
        compileall.compile_dir(os.path.join(checkout, "dask_strads"), quiet=1)
    rows = []
    for name, template in MEASURED.items():
        times = {variant: [] for variant in variants}
        for _ in range(args.repeats):
            for variant, (lasso, checkout) in variants.items():
                if variant == "sklearn" and name.startswith("import") or (
                        variant == "numba floor" and name.startswith("import dask_strads")):
                    continue  # scikit-learn's Lasso comes with the import measured against
                times[variant].append(seconds(template.format(lasso=lasso), checkout))
        medians = {variant: statistics.median(t) for variant, t in times.items() if t}
        rows.append((name, medians))
        print(name, {variant: round(m, 3) for variant, m in medians.items()}, flush=True)
    columns = list(variants)
    header = ["measured", *columns, *(f"dask_strads / {c}" for c in columns[1:])]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
    for name, medians in rows:
        cells = [f"{medians[c]:.3f}" if c in medians else "" for c in columns]
        ratios = [f"{medians['dask_strads'] / medians[c]:.2f}" if c in medians else ""
                  for c in columns[1:]]
        print(("| " + " | ".join([name, *cells, *ratios]) + " |") if args.markdown
              else "  ".join([name, *cells, *ratios]))


if __name__ == "__main__":
    main()
