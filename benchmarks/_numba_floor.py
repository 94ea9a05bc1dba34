"""scikit-learn's Lasso whose fit first calls one cached numba kernel: what any package that
jits its kernels with numba pays in a fresh process (numba's import, and the first call of a
cached kernel, which loads numba's typing and lowering registries), with no code of ours."""
import numpy as np
from numba import njit
from sklearn import linear_model


@njit(cache=True)
def _total(values):
    total = 0.0
    for value in values:
        total += value
    return total


class Lasso(linear_model.Lasso):
    def fit(self, X, y, sample_weight=None, check_input=True):
        _total(np.asarray(y, dtype=np.float64))
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)
