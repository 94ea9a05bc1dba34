"""Which estimator each ``dask-strads fit`` name builds, and ``-p NAME=VALUE`` typed as the
estimator declares its parameters."""
import ast

import dask_strads
from sklearn.utils._param_validation import (InvalidParameterError,
                                             validate_parameter_constraints)

#: ``dask-strads fit`` names and the estimators they build.
ESTIMATORS = {
    "bpr": "BayesianPersonalizedRanking",
    "elasticnet": "ElasticNet",
    "glm": "GeneralizedLinearRegressor",
    "implicit": "ImplicitMatrixFactorization",
    "lasso": "Lasso",
    "lda": "LatentDirichletAllocation",
    "linear_svc": "LinearSVC",
    "logistic": "LogisticRegression",
    "mf": "MatrixFactorization",
}

#: Parameters the command line does not set, and what to do instead.
NOT_FROM_COMMAND_LINE = {
    "callback": "a callback is Python code: fit from a script to give one",
    "checkpoint_dir": "give it as --checkpoint-dir DIR",
}


class UsageError(ValueError):
    """A command line that cannot run: exit code 2."""


def estimator_class(name):
    return getattr(dask_strads, ESTIMATORS[name])


def settable_defaults(cls):
    """``{name: default}`` of the parameters ``-p`` sets, sorted by name."""
    return {name: value for name, value in sorted(cls().get_params().items())
            if name not in NOT_FROM_COMMAND_LINE}


def parse_parameters(cls, assignments):
    """``{name: value}`` of ``NAME=VALUE`` strings, each value the first of (a Python literal,
    true/false/none, the text itself) that ``cls`` accepts for ``name``; a name given twice is
    refused."""
    valid = list(settable_defaults(cls))
    params = {}
    for assignment in assignments:
        name, equals, text = assignment.partition("=")
        name = name.strip()
        if not equals:
            raise UsageError(f"-p takes NAME=VALUE, got {assignment!r}")
        if name in NOT_FROM_COMMAND_LINE:
            raise UsageError(f"-p cannot set {name}: {NOT_FROM_COMMAND_LINE[name]}")
        if name not in valid:
            raise UsageError(f"{cls.__name__} has no parameter {name!r}; valid names: "
                             f"{', '.join(valid)}")
        if name in params:
            raise UsageError(f"-p {name} is given twice: give each parameter once")
        params[name] = _typed(cls, name, text.strip())
    return params


def _typed(cls, name, text):
    """The value ``text`` gives parameter ``name`` of ``cls``: a Python literal, true, false or
    none, the text itself, or a dict literal of the fields of a class the parameter takes
    (``-p "schedule={'kind': 'cyclic'}"``: a SamplingSchedule)."""
    constraints = {name: cls._parameter_constraints[name]}
    literal = _literal(text)
    messages = []
    for value in (literal, text):
        try:
            validate_parameter_constraints(constraints, {name: value}, cls.__name__)
            return value
        except InvalidParameterError as error:
            messages.append(str(error))
    if isinstance(literal, dict):
        for kind in constraints[name]:
            if isinstance(kind, type):
                try:
                    return kind(**literal)
                except (TypeError, ValueError) as error:
                    messages.insert(0, f"{kind.__name__}: {error}")
    raise UsageError(f"bad value {text!r}: {messages[0]}")


def _literal(text):
    words = {"true": True, "false": False, "none": None}
    if text.lower() in words:
        return words[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
