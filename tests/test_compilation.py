"""dask_strads.kernels.compilation: does a fit compile? Each scenario runs in a fresh Python
process with ``NUMBA_CACHE_DIR`` pointed at its own temporary directory, so that "cold" means
cold (nothing compiled in the process, nothing in numba's cache)."""
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba.core import types

import dask_strads
from dask_strads.kernels import compilation, lasso, margin_losses, mf
from dask_strads.kernels.compilation import all_kernel_sets, compiling_message

pytestmark = pytest.mark.slow

ROOT = str(Path(dask_strads.__file__).resolve().parent.parent)

PRELUDE = """
import json
import numpy as np
from dask_strads.kernels import compilation
from dask_strads.kernels.compilation import all_kernel_sets, announce_compiling, compiling_message
out = {}

def messages():
    return {name: compiling_message(name) for name in all_kernel_sets()}

def not_in_process():
    # the kernel sets some kernel of which this process has neither compiled nor loaded
    return sorted(name for name, kernels in all_kernel_sets().items()
                  if not all(any(accepts(signature) for signature in dispatcher.overloads)
                             for dispatcher, accepts in kernels))

def compiled():
    \"\"\"Number of signatures compiled or loaded in this process, over all kernel sets.\"\"\"
    return sum(len(dispatcher.overloads)
               for kernels in all_kernel_sets().values() for dispatcher, _ in kernels)

def run_mf():
    from dask_strads.kernels.mf import update_rows
    indptr = np.array([0, 2, 3]); indices = np.array([0, 1, 2])
    update_rows(indptr, indices, np.ones(3), np.zeros((2, 2)), np.ones((3, 2)), np.arange(2),
                np.ones(2), 2, 0.0)
"""


def run(code, cache_dir, **env):
    """Run ``code`` after the prelude in a fresh process, numba's cache in ``cache_dir`` (None:
    the suite's own, warm after the first fits); ``(out, stderr)``."""
    environment = dict(os.environ, **env)
    if cache_dir is not None:
        environment["NUMBA_CACHE_DIR"] = str(cache_dir)
    environment["PYTHONPATH"] = os.pathsep.join(
        [ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    script = PRELUDE + textwrap.dedent(code) + "\nprint('RESULT' + json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    line = [line for line in done.stdout.splitlines() if line.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):]), done.stderr


def test_cold_then_compiled_in_process_then_cached_on_disk(tmp_path):
    cold, _ = run("""
        out["before"] = messages()
        out["compiled_by_check"] = compiled()
        run_mf()
        out["after_mf"] = messages()
    """, tmp_path)
    # nothing compiled, nothing cached: every fit would compile, and says so
    for name, message in cold["before"].items():
        assert message is not None and message.startswith("compiling numba kernels for"), name
        assert "first use on this machine; cached afterwards" in message
    assert cold["before"]["mf"] == ("compiling numba kernels for mf (first use on this machine; "
                                    "cached afterwards)")
    assert cold["compiled_by_check"] == 0  # the check compiles (and loads) nothing
    # compiled in this process: no message for mf, the others still compile
    assert cold["after_mf"]["mf"] is None
    assert all(message is not None for name, message in cold["after_mf"].items() if name != "mf")

    warm, stderr = run("""
        out["messages"] = messages()
        out["compiled_by_check"] = compiled()
        out["announced"] = announce_compiling("mf")
    """, tmp_path)
    # a new process: mf is in numba's cache (found without loading it), the others are not;
    # a cached set is not announced
    assert warm["messages"]["mf"] is None
    assert warm["compiled_by_check"] == 0
    assert all(message is not None for name, message in warm["messages"].items() if name != "mf")
    assert warm["announced"] is None and "compiling" not in stderr

    other, _ = run('out["mf"] = compiling_message("mf")', tmp_path / "elsewhere")
    assert other["mf"] is not None  # another cache directory is cold again


def test_nothing_pending_after_a_fit_of_each_kind():
    # the kernel sets list only kernels that every fit of its kind calls: after the fits, the
    # sets of the kinds fitted are whole in the process (compiled, or loaded from the suite's
    # cache: a cold cache would show the same, at the cost of compiling every kind)
    result, _ = run("""
        import scipy.sparse as sp
        from dask_strads import (BayesianPersonalizedRanking, GeneralizedLinearRegressor, Lasso,
                                 LatentDirichletAllocation, LinearSVC, LogisticRegression,
                                 MatrixFactorization)
        rng = np.random.default_rng(0)
        X = sp.random(60, 30, density=0.3, format="csc", random_state=0)
        Lasso(alpha=0.01).fit(X, rng.standard_normal(60))
        Lasso(alpha=0.01).fit(X.astype(np.float32), rng.standard_normal(60))
        LogisticRegression(C=10.0).fit(X, np.arange(60) % 2)
        LinearSVC(C=10.0).fit(X, np.arange(60) % 2)  # sparse: the dual program
        LinearSVC("l1", C=10.0).fit(X, np.arange(60) % 2)  # the primal's squared hinge
        for loss in ("squared_error", "huber", "poisson"):
            GeneralizedLinearRegressor(loss, alpha=0.01).fit(X, rng.poisson(2.0, 60))
        counts = sp.random(30, 40, density=0.3, format="csr", random_state=0)
        counts.data = np.ceil(counts.data * 5)
        lda = LatentDirichletAllocation(n_components=3, max_iter=3).fit(counts)
        out["after_lda_fit"] = not_in_process()
        lda.transform(counts)
        ratings = sp.random(30, 20, density=0.3, format="csr", random_state=0)
        MatrixFactorization(n_components=2, max_iter=3).fit(ratings)
        BayesianPersonalizedRanking(n_components=2, max_iter=2).fit(ratings)
        out["left"] = not_in_process()
    """, None)
    assert "lda" not in result["after_lda_fit"]
    assert "lda_inference" in result["after_lda_fit"]
    # only the sparse variants of the elastic net (float64 and float32), of the prox-Newton
    # program (logistic regression, the regression losses) and of the SVM's two programs were
    # fitted, and the STRADS sampling schedules ("lasso"), a
    # cross-validation's folds, LDA's alias sampler (K = 3 samples with SparseLDA) and MedLDA's
    # sampler run in no such fit
    assert result["left"] == sorted([
        "lasso", "lasso_sparse", "enet", "enet_folds", "enet_folds_sparse", "lasso_float32",
        "lasso_sparse_float32", "enet_float32", "enet_folds_float32",
        "enet_folds_sparse_float32", "lda_alias", "medlda", "implicit_mf", "prox_newton",
        "svm_dual"])


def test_a_dense_fit_compiles_its_own_set_once_and_a_float32_fit_another(tmp_path):
    """Two dense float64 fits in a cold process: the first says it compiles the elastic net's
    kernels, the second says nothing, and the sparse variant (dense and sparse are told apart)
    and the float32 one are still to compile. float32 blocks are a specialisation of their own:
    compiled (and said so) by the first float32 fit after the float64 ones. A new process with
    the cache filled finds the dense set cached without loading anything, the sparse one still
    missing, and its fits say nothing."""
    fits = """
        import sys
        import warnings
        warnings.simplefilter("ignore")
        from dask_strads import Lasso
        from dask_strads.datasets import make_correlated_regression
        out["before"] = messages()
        out["compiled_by_check"] = compiled()
        X, y, _ = make_correlated_regression(50, 10, 3, random_state=0)
        Lasso(alpha=0.1).fit(X, y)
        Lasso(alpha=0.2).fit(X, y)
        out["after_float64"] = messages()
        print("float32 fit", file=sys.stderr, flush=True)
        Lasso(alpha=0.1).fit(X.astype(np.float32), y)
        Lasso(alpha=0.2).fit(X.astype(np.float32), y)
        out["after_float32"] = messages()
    """
    first, cold = run(fits, tmp_path)
    assert first["after_float64"]["enet"] is None  # Lasso runs the elastic-net program
    assert first["after_float64"]["enet_sparse"] == (
        "compiling numba kernels for sparse elastic net (first use on this machine; cached "
        "afterwards)")
    assert first["after_float64"]["enet_float32"] == (
        "compiling numba kernels for elastic net (float32) (first use on this machine; cached "
        "afterwards)")
    assert first["after_float32"]["enet_float32"] is None
    float64_part, float32_part = cold.split("float32 fit")
    assert float64_part.count("compiling numba kernels for elastic net (first use") == 1, cold
    assert "(float32)" not in float64_part
    assert float32_part.count("compiling numba kernels for elastic net (float32)") == 1, cold

    second, warm = run(fits, tmp_path)
    assert second["before"]["enet"] is None and second["before"]["enet_float32"] is None
    assert second["before"]["enet_sparse"] is not None
    assert second["compiled_by_check"] == 0
    assert "compiling" not in warm, warm


def test_announced_once_per_process(tmp_path):
    result, stderr = run("""
        said = []
        out["first"] = announce_compiling(["mf", "lda"], emit=said.append)
        out["again"] = announce_compiling("mf", emit=said.append)  # not compiled yet, still quiet
        out["new_set"] = announce_compiling(["mf", "lda_inference"], emit=said.append)
        out["said"] = said
        out["default"] = announce_compiling("lasso")  # to stderr
    """, tmp_path)
    assert result["first"] == ("compiling numba kernels for mf and lda (first use on this "
                               "machine; cached afterwards)")
    assert result["again"] is None
    assert result["new_set"] == ("compiling numba kernels for lda transform (first use on this "
                                 "machine; cached afterwards)")
    assert result["said"] == [result["first"], result["new_set"]]
    assert result["default"] in stderr


def test_no_message_without_jit(tmp_path):
    result, _ = run('out["messages"] = messages()', tmp_path, NUMBA_DISABLE_JIT="1")
    assert all(message is None for message in result["messages"].values())


def test_unknown_kernel_set():
    with pytest.raises(ValueError, match="unknown kernel set"):
        compiling_message("lassso")
    with pytest.raises(ValueError, match="unknown kernel set"):
        compilation.announce_compiling(["lasso", "svm"])


def test_kernel_sets_hold_dispatchers():
    for kernels in all_kernel_sets().values():
        for dispatcher, _ in kernels:
            assert hasattr(dispatcher, "overloads") or os.environ.get("NUMBA_DISABLE_JIT")


def test_a_kernel_set_is_declared_by_its_module(tmp_path):
    # compilation knows no set by itself; asking for one not yet declared imports the kernel
    # modules; a loss's set is its LossKernels'
    result, _ = run("""
        import sys
        out["before"] = sorted(compilation.KERNEL_SETS)
        out["mf_imported"] = "dask_strads.kernels.mf" in sys.modules
        out["message"] = compiling_message("mf")
        out["mf_imported_after"] = "dask_strads.kernels.mf" in sys.modules
        from dask_strads.kernels.margin_losses import HUBER
        out["huber"] = [d.py_func.__name__ for d, _ in compilation.KERNEL_SETS[HUBER.set_name]]
        out["label"] = compilation.LABELS["huber_loss"]
    """, tmp_path)
    assert result["before"] == [] and not result["mf_imported"]
    assert result["message"] is not None and result["mf_imported_after"]
    assert result["huber"] == ["_huber", "_huber_derivatives", "_huber_change"]
    assert result["label"] == "Huber loss"


def test_loss_kernels_travel_by_name():
    assert pickle.loads(pickle.dumps(margin_losses.HUBER)) is margin_losses.HUBER
    z, y, C = np.array([0.0, 3.0]), np.array([0.5, 0.0]), np.ones(2)
    # Huber (delta 1): 0.5 * 0.5 ** 2 and 1 * (3 - 0.5); the change to z + q, summed
    assert margin_losses.HUBER.value(z, y, C, 1) == pytest.approx(0.125 + 2.5)
    assert margin_losses.HUBER.change(z, np.ones(2), 1, y, C, 1) == pytest.approx(
        0.125 + 3.5 - (0.125 + 2.5))
    g, h = margin_losses.HUBER.derivatives(z, y, C, 1)
    assert g.tolist() == [-0.5, 1.0] and h.tolist() == [1.0, 1.0]


def test_int_scalars_do_not_compile_another_specialisation():
    # Lasso(alpha=1), tol=0, doc_topic_prior=1: ints where the kernels take floats
    # (fits earlier in this process may have compiled other variants: count the new ones)
    indptr, indices = np.array([0, 2, 3]), np.array([0, 1, 2])
    known = set(mf._update_rows.signatures)
    for sweeps, tol in ((2, 0), (2, 0.0), (np.int32(2), np.float32(0))):
        mf.update_rows(indptr, indices, np.ones(3), np.zeros((2, 2)), np.ones((3, 2)),
                       np.arange(2), np.ones(2), sweeps, tol)
    assert len(set(mf._update_rows.signatures) - known) <= 1

    X = np.asfortranarray(np.random.default_rng(0).standard_normal((20, 8)))
    z, r = np.zeros(8), np.ones(20)
    known = set(lasso._full_pass.signatures)
    for offset, alpha_n, positive in ((0, 1, False), (0.0, 1.0, np.bool_(True)), (0, 2, 0)):
        lasso.full_pass(X, z, r, offset, z + 1, z, z + 1, alpha_n, positive, z.copy())
    new = set(lasso._full_pass.signatures) - known
    assert len([s for s in new if isinstance(s[0], types.Array)]) <= 1
