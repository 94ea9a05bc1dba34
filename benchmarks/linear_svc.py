"""Linear SVM: dask_strads.LinearSVC beside scikit-learn's LinearSVC (liblinear), on real TF-IDF
text classification.

One process run, both on the same data and the same C (1.0), each formulation liblinear has:
the squared hinge with the l2 penalty (default; liblinear's dual coordinate descent and primal
Newton solvers), the hinge (dual only) and the squared hinge with the l1 penalty (primal only).
Per problem and formulation it prints the median wall time of ``--repeats`` timed fits, the
solvers fitting in turn (dask_strads first fits once untimed: numba compilation), the
relative suboptimality ``(P(w) - P*) / P*`` of liblinear's objective (the intercept a
penalised constant feature, computed here in numpy), the rounds or iterations, and
``dask_strads time / this solver's time``. ``P*`` is the best objective of everything run, a
tight reference fit by each included.

Stopping rules, each solver's own at its default ``tol=1e-4``: dask_strads's dual program on
the duality gap relative to the objective (a bound on its suboptimality), its primal one on the
largest violation of the optimality conditions relative to the largest gradient at w = 0;
liblinear's dual solvers on its projected gradients, its primal ones on the gradient's norm
relative to its start. "tol 1e-6" rows: dask_strads with a relative duality gap of 1e-6, which
certifies an objective within 1e-6 of the optimum.

Problems (``benchmarks/logistic.py``'s loaders and labels)
  a  tweets, unigrams in at least 5 tweets: 20761 x 5151; label: favourites above the median
  b  the same tweets, unigrams and bigrams, all terms: 20761 x 173338, 656k stored values

``--passes 1,2,3,5`` instead times dask_strads's dual program (hinge and squared hinge, l2, to a
relative duality gap of 1e-6) with each of these budgets of work a push (in passes over its
block's samples, ``programs.svm_dual.PASSES``, for both losses), in this process.

``--blocks 1,2,4`` instead fits dask_strads (each formulation, default tol, ``max_iter=300``)
with these numbers of blocks, in this process: the rounds, time and suboptimality (blocks
updated in the same round interfere).

Usage
  python benchmarks/linear_svc.py                  # a and b, 5 repeats
  python benchmarks/linear_svc.py --problems b --repeats 3 --markdown
  python benchmarks/linear_svc.py --passes 1,2,3,5 --repeats 3
  python benchmarks/linear_svc.py --blocks 1,2,4 --problems a --repeats 1
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402
from benchmarks.logistic import PROBLEMS, problem, timed_fits  # noqa: E402

from dask_strads import LinearSVC  # noqa: E402

C = 1.0
#: penalty, loss, and the dual values liblinear has for them
FORMULATIONS = {"l2 squared hinge": ("l2", "squared_hinge", (True, False)),
                "l2 hinge": ("l2", "hinge", (True,)),
                "l1 squared hinge": ("l1", "squared_hinge", (False,))}
#: the tight references: dask_strads's and liblinear's
TIGHT = {"l2": 1e-10, "l1": 1e-8}


def objective(X, y, model, penalty, loss):
    w = np.append(model.coef_.ravel(), model.intercept_[0])  # intercept_scaling 1
    slack = np.maximum(0.0, 1.0 - (2 * y - 1) * (X @ w[:-1] + w[-1]))
    datafit = C * float((slack if loss == "hinge" else slack * slack).sum())
    return datafit + (float(np.abs(w).sum()) if penalty == "l1" else 0.5 * float(w @ w))


def solvers(penalty, loss, duals):
    from sklearn.svm import LinearSVC as SkLinearSVC

    def ours(**params):
        return lambda: LinearSVC(penalty, loss, C=C, random_state=0, **params)

    def liblinear(**params):
        return lambda: SkLinearSVC(penalty, loss, C=C, random_state=0, max_iter=100_000,
                                   **params)

    runs = {"dask_strads": ours(), "dask_strads tol 1e-6": ours(tol=1e-6),
            "liblinear": liblinear()}
    if len(duals) > 1:
        runs.update({f"liblinear dual={d}": liblinear(dual=d) for d in duals})
    tight = {"dask_strads tight": ours(tol=TIGHT[penalty], max_iter=100_000),
             "liblinear tight": liblinear(tol=TIGHT[penalty])}
    return runs, tight


def timed(make, X, y, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model = make().fit(X, y)
        times.append(time.perf_counter() - start)
    return statistics.median(times), model


def passes(args):
    """Each budget's median time and rounds to a gap of 1e-6 (in-process fits: the program
    reads the module's PASSES at each push)."""
    from dask_strads.programs import svm_dual

    for key in args.problems.split(","):
        X, y = problem(key)
        for loss in ("hinge", "squared_hinge"):
            for budget in map(float, args.passes.split(",")):
                svm_dual.PASSES = budget
                make = lambda: LinearSVC(loss=loss, tol=1e-6, random_state=0)  # noqa: E731
                make().fit(X, y)  # warm-up: numba compilation
                seconds, model = timed(make, X, y, args.repeats)
                print(f"{key} {loss:13} passes {budget:g}: {seconds:.3f} s, "
                      f"{model.n_iter_} rounds")


def blocks(args):
    """Each formulation's fit with each number of blocks: rounds, median time, suboptimality
    against a tight one-block fit."""
    for key in args.problems.split(","):
        X, y = problem(key)
        for formulation, (penalty, loss, _) in FORMULATIONS.items():
            best = objective(X, y, LinearSVC(penalty, loss, C=C, tol=TIGHT[penalty],
                                             max_iter=100_000, random_state=0).fit(X, y),
                             penalty, loss)
            for n_blocks in map(int, args.blocks.split(",")):
                make = lambda: LinearSVC(penalty, loss, C=C, n_blocks=n_blocks,  # noqa: E731
                                         max_iter=300, random_state=0)
                seconds, model = timed(make, X, y, args.repeats)
                print(f"{key} {formulation:17} {n_blocks} blocks: {model.n_iter_:4d} rounds, "
                      f"{seconds:.3f} s, rel. subopt. "
                      f"{(objective(X, y, model, penalty, loss) - best) / best:.1e}")


def main():
    args = arguments(__doc__, repeats=5, extra=[("--problems", {"default": "a,b"}),
                                                 ("--passes", {"default": None}),
                                                 ("--blocks", {"default": None})])
    if args.passes:
        return passes(args)
    if args.blocks:
        return blocks(args)
    rows = []
    for key in args.problems.split(","):
        X, y = problem(key)
        name = f"{key} {PROBLEMS[key][0]} {X.shape[0]}x{X.shape[1]}"
        for formulation, (penalty, loss, duals) in FORMULATIONS.items():
            runs, tight = solvers(penalty, loss, duals)
            # in turn, repeat by repeat; "dask_strads" fits once untimed first (numba)
            results = {solver: (seconds, model) for solver, (seconds, _, model)
                       in timed_fits(runs, X, y, args.repeats, args.repeats).items()}
            values = {solver: objective(X, y, model, penalty, loss)
                      for solver, (_, model) in results.items()}
            best = min([*values.values()] + [objective(X, y, make().fit(X, y), penalty, loss)
                                             for make in tight.values()])
            ours = results["dask_strads"][0]
            for solver, (seconds, model) in results.items():
                rows.append((name, formulation, solver, seconds, (values[solver] - best) / best,
                             int(np.max(model.n_iter_)), ours / seconds))
    header = ("problem", "formulation", "solver", "median s", "rel. subopt.", "rounds/iter.",
              "dask_strads / solver")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for p, f, solver, seconds, subopt, n_iter, ratio in rows:
            print(f"| {p} | {f} | {solver} | {seconds:.3f} | {subopt:.1e} | {n_iter} | "
                  f"{ratio:.2f} |")
    else:
        for p, f, solver, seconds, subopt, n_iter, ratio in rows:
            print(f"{p:34} {f:17} {solver:22} {seconds:8.3f} s  {subopt:9.1e}  {n_iter:6d}  "
                  f"{ratio:6.2f}")


if __name__ == "__main__":
    main()
