"""scikit-learn estimators running STRADS programs."""
from .lasso import Lasso
from .lda import LatentDirichletAllocation

__all__ = ["Lasso", "LatentDirichletAllocation"]
