"""scikit-learn estimators running STRADS programs."""
from .elastic_net import ElasticNet
from .lasso import Lasso
from .lda import LatentDirichletAllocation
from .mf import MatrixFactorization

__all__ = ["ElasticNet", "Lasso", "LatentDirichletAllocation", "MatrixFactorization"]
