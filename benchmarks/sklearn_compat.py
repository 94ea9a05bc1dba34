"""scikit-learn's own tests of its linear models, run against dask_strads' estimators.

The test files are those of the installed scikit-learn (nothing is copied into this repository):
``test_coordinate_descent.py``, ``test_sparse_coordinate_descent.py`` and ``test_logistic.py``
of the package ``sklearn.linear_model.tests``. Before pytest imports them,
``sklearn.linear_model``'s ``Lasso``,
``ElasticNet``, ``LassoCV``, ``ElasticNetCV``, ``LogisticRegression``, ``lasso_path`` and
``enet_path`` are replaced by dask_strads' (the test files import them from there; scikit-learn's
own internals keep theirs). A test *reaches* our code when it constructs one of our estimators or
calls one of our functions; only those are counted. With ``--lenient``, keyword arguments that
only scikit-learn has (``precompute=``, ``selection=``, ...) are dropped instead of raising a
TypeError, as a user porting code would delete them.

    python benchmarks/sklearn_compat.py                 # all three files, strict
    python benchmarks/sklearn_compat.py --lenient       # sklearn-only keywords dropped
    python benchmarks/sklearn_compat.py --files logistic --reasons 30
    python benchmarks/sklearn_compat.py --failures      # also every failing test, with its reason

Each file runs in a process of its own (pytest, ``-p no:cacheprovider``, a 120 s timeout per
test); the script prints, per file, the tests collected, those that reached our code, how many
of them passed, and the failures' reasons (exception type and first line, digits masked)
grouped, most frequent first.
"""
import argparse
import functools
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

FILES = {
    "coordinate_descent": "test_coordinate_descent.py",
    "sparse_coordinate_descent": "test_sparse_coordinate_descent.py",
    "logistic": "test_logistic.py",
}
#: The names replaced in ``sklearn.linear_model`` (classes and functions of dask_strads).
REPLACED = ("Lasso", "ElasticNet", "LassoCV", "ElasticNetCV", "LogisticRegression",
            "lasso_path", "enet_path")


class Plugin:
    """A pytest plugin: puts our estimators in ``sklearn.linear_model`` at configure time and
    records, per test, whether it reached them and its outcome."""

    def __init__(self, lenient):
        self.lenient = lenient
        self.reached = False
        self.results = {}

    def pytest_configure(self, config):
        import sklearn.linear_model as linear_model

        import dask_strads

        for name in REPLACED:
            setattr(linear_model, name, self._stand_in(getattr(dask_strads, name)))

    def _stand_in(self, ours):
        plugin = self
        if not inspect.isclass(ours):
            accepted = inspect.signature(ours).parameters

            @functools.wraps(ours)
            def function(*args, **kwargs):
                plugin.reached = True
                return ours(*args, **plugin._kept(accepted, kwargs))
            return function
        accepted = inspect.signature(ours.__init__).parameters

        def __init__(self, *args, **kwargs):
            plugin.reached = True
            ours.__init__(self, *args, **plugin._kept(accepted, kwargs))

        __init__.__signature__ = inspect.signature(ours.__init__)
        namespace = {"__init__": __init__, "__module__": ours.__module__}
        for method in ("fit", "predict", "score", "decision_function", "predict_proba"):
            if hasattr(ours, method):
                namespace[method] = self._marking(getattr(ours, method))
        return type(ours.__name__, (ours,), namespace)

    def _marking(self, method):
        plugin = self

        @functools.wraps(method)
        def marked(*args, **kwargs):
            plugin.reached = True
            return method(*args, **kwargs)
        return marked

    def _kept(self, accepted, kwargs):
        if not self.lenient or any(p.kind == p.VAR_KEYWORD for p in accepted.values()):
            return kwargs
        return {k: v for k, v in kwargs.items() if k in accepted}

    def pytest_runtest_setup(self, item):
        self.reached = False

    def pytest_runtest_logreport(self, report):
        entry = self.results.setdefault(report.nodeid, {"outcome": "passed", "reached": False})
        entry["reached"] |= self.reached
        if report.skipped:
            entry["outcome"] = "skipped"
        elif report.failed and entry["outcome"] != "skipped":
            entry["outcome"] = "failed"
            crash = getattr(report.longrepr, "reprcrash", None)
            entry["reason"] = crash.message if crash is not None else str(report.longrepr)[-300:]


def run_file(path, lenient, out):
    """Run one test file under the plugin (in this process) and write its results to ``out``."""
    import pytest

    plugin = Plugin(lenient)
    pytest.main([path, "-q", "-p", "no:cacheprovider", "--timeout=120", "-W", "ignore",
                 "--no-header", "--tb=line", "-rN", f"--rootdir={os.path.dirname(path)}",
                 "-c", os.devnull], plugins=[plugin])
    with open(out, "w") as f:
        json.dump(plugin.results, f)


def reason_key(message):
    """A failure's reason with its numbers and quoted arrays masked, first line only."""
    line = (message or "").strip().splitlines()[0] if message else "?"
    line = re.sub(r"array\(\[.*", "array([...])", line)
    line = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", line)
    return line[:160]


def summary(results):
    reached = {k: v for k, v in results.items() if v["reached"] and v["outcome"] != "skipped"}
    passed = sum(v["outcome"] == "passed" for v in reached.values())
    reasons = Counter(reason_key(v.get("reason")) for v in reached.values()
                      if v["outcome"] == "failed")
    return len(results), len(reached), passed, reasons


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default=",".join(FILES),
                        help=f"comma-separated among {', '.join(FILES)}")
    parser.add_argument("--lenient", action="store_true",
                        help="drop keyword arguments only scikit-learn has")
    parser.add_argument("--reasons", type=int, default=15, help="reasons listed per file")
    parser.add_argument("--failures", action="store_true",
                        help="list every failing test that reaches our code, with its reason")
    parser.add_argument("--run-file", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_file:
        return run_file(args.run_file, args.lenient, args.out)

    import sklearn

    tests = os.path.join(os.path.dirname(sklearn.__file__), "linear_model", "tests")
    print(f"scikit-learn {sklearn.__version__}; load average at start: {os.getloadavg()}; "
          f"{'lenient' if args.lenient else 'strict'}")
    totals = [0, 0, 0]
    for name in args.files.split(","):
        path = os.path.join(tests, FILES[name])
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run([sys.executable, __file__, "--run-file", path, "--out", out.name]
                           + (["--lenient"] if args.lenient else []),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            with open(out.name) as f:
                results = json.load(f)
        collected, reached, passed, reasons = summary(results)
        totals = [t + v for t, v in zip(totals, (collected, reached, passed))]
        share = passed / reached if reached else float("nan")
        print(f"\n{FILES[name]}: {collected} tests, {reached} reach our code, {passed} pass "
              f"({share:.0%}), {reached - passed} fail")
        for reason, count in reasons.most_common(args.reasons):
            print(f"  {count:4d}  {reason}")
        if args.failures:
            for nodeid, entry in sorted(results.items()):
                if entry["reached"] and entry["outcome"] == "failed":
                    print(f"    {nodeid.split('::', 1)[-1]}: {reason_key(entry.get('reason'))}")
    collected, reached, passed = totals
    print(f"\nall files: {collected} tests, {reached} reach our code, {passed} pass "
          f"({passed / max(reached, 1):.1%}); load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
