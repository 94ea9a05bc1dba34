"""Problems and the reference objective shared by the Lasso tests."""
import numpy as np
import scipy.sparse as sp


def ar1_design(n, p, rho, seed=0, n_true=10, intercept=5.0):
    """AR(1) columns: corr(x_j, x_k) = rho^|j-k|; y from a sparse w plus noise."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, p))
    X[:, 0] = rng.standard_normal(n)
    for j in range(1, p):
        X[:, j] = rho * X[:, j - 1] + np.sqrt(1 - rho**2) * rng.standard_normal(n)
    w = np.zeros(p)
    w[rng.choice(p, n_true, replace=False)] = 3 * rng.standard_normal(n_true)
    return X, X @ w + rng.standard_normal(n) + intercept


def objective(X, y, coef, intercept, alpha):
    """sklearn's Lasso objective, in numpy."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    residual = y - X @ np.asarray(coef) - intercept
    return 0.5 * np.dot(residual, residual) / len(y) + alpha * np.abs(coef).sum()
