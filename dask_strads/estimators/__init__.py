"""scikit-learn estimators running STRADS programs."""
from .lasso import Lasso
from .lda import LatentDirichletAllocation
from .mf import MatrixFactorization

__all__ = ["Lasso", "LatentDirichletAllocation", "MatrixFactorization"]
