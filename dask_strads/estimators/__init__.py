"""scikit-learn estimators running STRADS programs."""
from .lasso import Lasso

__all__ = ["Lasso"]
