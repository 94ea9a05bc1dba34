"""What the linear classifiers (LogisticRegression, LinearSVC) share: checking their input, the
samples' weights from ``sample_weight`` and ``class_weight``, and liblinear's intercept, the
weight of a constant feature."""
import numpy as np
import scipy.sparse as sp
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight

from .inputs import checked_design, is_dask_array, is_sparse


def checked_classification_data(estimator, X, y):
    """``(X, y, classes, stored, executor)``: X (numpy, scipy.sparse, pydata sparse or dask
    array) and its labels checked, their sorted classes (at least two), X's stored values (None
    for a dask array) and where the fit runs."""
    X, y, stored, executor = checked_design(estimator, X, y, numeric_y=False)
    check_classification_targets(y)
    classes = np.unique(y)
    if len(classes) < 2:
        raise ValueError("This solver needs samples of at least 2 classes in the data, but "
                         f"the data contain only one class: {classes[0]!r}")
    return X, y, classes, stored, executor


def sample_weights(sample_weight, y, classes, class_weight):
    """Each sample's weight: ``sample_weight`` times its class's weight (None for none)."""
    if sample_weight is None and class_weight is None:
        return None
    weights = _checked_sample_weight(sample_weight, len(y))
    if class_weight is not None:
        weights *= _class_weights(class_weight, y, classes, weights)[np.searchsorted(classes, y)]
    return weights


def liblinear_weights(sample_weight, y, classes, class_weight):
    """The samples' weights in liblinear's one-vs-rest problems (None for none): for two
    classes, :func:`sample_weights`; for more, one row a problem, where a sample of the
    problem's class weighs ``sample_weight`` times that class's weight and the others their
    ``sample_weight`` alone (liblinear weighs each problem's positive class only)."""
    if len(classes) == 2 or class_weight is None:
        return sample_weights(sample_weight, y, classes, class_weight)
    weights = _checked_sample_weight(sample_weight, len(y))
    per_class = _class_weights(class_weight, y, classes, weights)
    return weights * np.where(y == classes[:, None], per_class[:, None], 1.0)


def _checked_sample_weight(sample_weight, n_samples):
    return _check_sample_weight(sample_weight, np.empty((n_samples, 0)), dtype=np.float64,
                                copy=True, ensure_non_negative=True)


def _class_weights(class_weight, y, classes, weights):
    """Each class's weight, as scikit-learn computes it (``"balanced"``: from the samples'
    weighted counts)."""
    return compute_class_weight(class_weight, classes=classes, y=y, sample_weight=weights)


def without_constant_column(coef, value):
    """``(coef, intercept)`` of coefficients fitted on :func:`with_constant_column`'s X: the
    features' and, for the intercept, the constant column's weight times its ``value``."""
    return coef[:, :-1], value * coef[:, -1]


def convergence_message(estimator, n_iter, history, measure, label):
    """What an unconverged fit of ``estimator`` says: its rounds and the last relative
    ``measure`` of its ``history`` (``label`` names it) against its tolerance."""
    reached = [record[measure] for record in history if measure in record]
    return (f"{type(estimator).__name__} did not converge in {n_iter} rounds (relative {label} "
            f"{reached[-1] if reached else np.inf:.2e}, tol {estimator.tol:.1e}). Consider "
            "increasing max_iter.")


def with_constant_column(X, value):
    """X (ndarray, scipy CSR/CSC or Dask array) with a last column of ``value``."""
    if is_dask_array(X):
        import dask.array as da

        column = da.full((X.shape[0], 1), float(value), chunks=(X.chunks[0], 1))
        if is_sparse(X):
            import sparse

            column = column.map_blocks(sparse.COO.from_numpy)
        return da.concatenate([X, column], axis=1)
    column = np.full((X.shape[0], 1), float(value))
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(column)], format=X.format)
    return np.hstack([X, column])
