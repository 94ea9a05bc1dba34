"""What each ``dask-strads`` command does, once its arguments are parsed and the client (or
None: the embedded default) is connected."""
import numpy as np
from sklearn.base import is_classifier, is_regressor
from sklearn.utils import get_tags

from .. import io
from ..estimators.mf_pairs import filled, positions
from ..estimators.recommender import Recommender
from ..log import logger
from ..persistence import check_model_path, read_model, save
from .files import as_ids, check_output, read_ids, write_table
from .parameters import UsageError, estimator_class, parse_parameters



def _recommends(model):
    return isinstance(model, Recommender)


def _ranks_only(model):
    """A recommender that ranks items and predicts no values (no ratings to predict)."""
    return _recommends(model) and not hasattr(model, "predict_entries")


def _transforms(model):
    """Predictions are ``transform``'s rows (topic proportions) rather than ``predict``'s."""
    return not _recommends(model) and get_tags(model).transformer_tags is not None


def fit(args, client):
    try:
        check_model_path(args.output)  # before the fit, not after it
    except IsADirectoryError as error:
        raise UsageError(str(error)) from None
    cls = estimator_class(args.estimator)
    params = parse_parameters(cls, args.param)
    if args.checkpoint_dir:
        params["checkpoint_dir"] = args.checkpoint_dir
    params.setdefault("progress", not args.quiet and _has_tqdm())
    estimator = cls(**params)
    estimator._validate_params()  # usage errors before reading the data
    format = _format(args.input, args.format)
    supervised = is_regressor(estimator) or is_classifier(estimator)
    if supervised and format != "svmlight":
        raise UsageError(f"{cls.__name__} needs targets: give an svmlight file (each line's "
                         f"target first), not {format}")
    _check_matrix_format(estimator, format)
    data = _read(args.input, format, client)
    estimator.client = client
    logger.info("fitting %s on %s", cls.__name__, _described(data.X))
    if supervised:
        estimator.fit(data.X, data.y)
    else:
        estimator.fit(data.X)
    if data.vocabulary is not None:
        estimator.vocabulary_ = data.vocabulary
    estimator.progress = False  # a bar belongs to this run, not to the saved model
    save(estimator, args.output)
    logger.info("saved the model to %s", args.output)


def predict(args, client):
    check_output(args.output)
    model, _ = read_model(args.model)
    model.client = client
    if _ranks_only(model):
        raise UsageError(f"{args.model} holds a {type(model).__name__}, which predicts no "
                         "values (it ranks items): use recommend")
    if _recommends(model):
        columns = _predicted_pairs(model, args.input, args.format, args.unknown)
    else:
        format = _format(args.input, args.format)
        _check_matrix_format(model, format)
        if format == "svmlight":  # as wide as the fit's data, whatever indices this file holds
            X = io.read_svmlight(args.input, n_features=model.n_features_in_, client=client)[0]
        else:
            X = _read(args.input, format, client).X
        if _transforms(model):
            rows = _in_memory(model.transform(X), client)
            columns = {f"topic_{k}": rows[:, k] for k in range(rows.shape[1])}
        else:
            columns = {"prediction": _in_memory(model.predict(X), client)}
    write_table(columns, args.output)
    logger.info("wrote %d rows to %s", len(next(iter(columns.values()))), args.output)


def _predicted_pairs(model, path, format, unknown):
    """The columns user, item, prediction of the (user, item) pairs of a table. A pair with a
    user or item unknown to the model is predicted as ``MatrixFactorization.predict`` does
    (the global mean plus the known bias), or refused when ``unknown`` is "error"."""
    pairs = io.read_table(path, ("user", "item"), format=format)
    users = as_ids(pairs["user"].to_numpy(), model.user_ids_, "user")
    items = as_ids(pairs["item"].to_numpy(), model.item_ids_, "item")
    rows, cols = positions(model.user_ids_, users), positions(model.item_ids_, items)
    missing = (rows < 0) | (cols < 0)
    if missing.any():
        found = (f"{missing.sum()} of {len(missing)} pairs of {path} have a user or item the "
                 f"model was not fitted on (first: {_first_pairs(users, items, missing)})")
        if unknown == "error":
            raise ValueError(f"{found}: predict them from the global mean and biases without "
                             "--unknown error")
        logger.warning("%s: predicted from the global mean plus the known user's or item's "
                       "bias", found)
    return {"user": users, "item": items,
            "prediction": model._factors().predict_known(rows, cols)}


def _first_pairs(users, items, missing, n=3):
    return ", ".join(f"({user!r}, {item!r})" for user, item in
                     zip(users[missing][:n].tolist(), items[missing][:n].tolist()))


def recommend(args, client):
    check_output(args.output)
    if args.all and not args.output.lower().endswith(".parquet"):
        raise UsageError(f"recommend --all writes a folder of Parquet files: end {args.output} "
                         "in .parquet")
    model, _ = read_model(args.model)
    if not _recommends(model):
        raise UsageError(f"recommend needs a recommender's model (mf, implicit or bpr), "
                         f"{args.model} holds a {type(model).__name__}")
    if args.all:
        model.client = client
        model.recommend_all(n=args.n, path=args.output)
        logger.info("wrote the %d best items of each of %d users to %s", args.n,
                    len(model.user_ids_), args.output)
        return
    users = read_ids(args.users, "user", model.user_ids_)
    unknown = positions(model.user_ids_, users) < 0
    if unknown.any():
        raise ValueError(f"{unknown.sum()} of {len(users)} user ids of {args.users} are not in "
                         f"the model: {users[unknown][:5].tolist()}")
    top = model.recommend(users, n=args.n)
    found = filled(top)
    write_table({"user": np.repeat(users, found.sum(axis=1)),
                 "rank": np.nonzero(found)[1] + 1,
                 "item": top[found]}, args.output)
    logger.info("wrote %d recommendations for %d users to %s", found.sum(), len(users),
                args.output)


def info(args, client):
    model, about = read_model(args.model)
    print(f"model file: {args.model} ({about['format']} version {about['version']}, "
          f"written by dask_strads {about['dask_strads']})")
    print(f"estimator: {type(model).__name__}")
    print("parameters:")
    for name, value in sorted(model.get_params().items()):
        print(f"  {name} = {value!r}")
    fitted = {k: v for k, v in sorted(vars(model).items())
              if k.endswith("_") and not k.startswith("_") and k != "history_"}
    if not fitted:
        print("not fitted")
        return
    print("fitted:")
    for name, value in fitted.items():
        shown = (f"array {value.shape} {value.dtype}" if isinstance(value, np.ndarray)
                 else repr(value))
        print(f"  {name}: {shown}")
    history = getattr(model, "history_", None)
    if history is not None:
        stats = history.stats
        print(f"history: {len(history)} records, {stats.rounds} rounds{_why(history)}, "
              f"{stats.wall_seconds:.3g} s, converged: {stats.converged}")
        if history.records:
            last = {k: v for k, v in history.records[-1].items() if isinstance(v, (int, float))}
            print("  last: " + ", ".join(f"{k}={v:.6g}" for k, v in last.items()))
    words = getattr(model, "vocabulary_", None)
    if words is not None:
        for k, topic in enumerate(model.components_[:10]):
            print(f"  topic {k}: {' '.join(words[np.argsort(-topic)[:8]])}")


def _check_matrix_format(estimator, format):
    """Refuse a table (read as user, item, rating rows) for an estimator of matrices: LDA would
    take its rows for documents of three words."""
    if io.FORMATS[format].table and not _recommends(estimator):
        needs = ("a document x word count matrix" if _transforms(estimator)
                 else "a matrix of samples x features")
        raise UsageError(f"{type(estimator).__name__} needs {needs}: give a bag-of-words "
                         "file (docword.NAME.txt), MatrixMarket (.mtx), svmlight, .npz "
                         f"(scipy.sparse) or .npy file, not a {format} table (read as (user, "
                         "item, rating) rows, for mf and implicit)")


def _format(path, given):
    try:
        return given or io.format_of(path)
    except ValueError as error:  # a name that says no format
        raise UsageError(str(error)) from None


def _read(path, format, client):
    return io.read(path, _format(path, format), client)


def _why(history):
    """Why a history holds fewer records than rounds: a record per iteration of several
    rounds, and rounds run after the last record (in flight when the fit stopped)."""
    rounds = [record["round"] for record in history.records]
    reasons = []
    steps = set(np.diff(rounds).tolist())
    if len(steps) == 1 and steps != {1}:
        reasons.append(f"a record every {steps.pop()} rounds: one per iteration")
    after = history.stats.rounds - 1 - (rounds[-1] if rounds else -1)
    if after > 0:
        reasons.append(f"{after} round{'s' if after > 1 else ''} after the last record, run "
                       "while the fit was stopping")
    return f" ({'; '.join(reasons)})" if reasons else ""


def _described(X):
    """``ROWSxCOLUMNS`` of a matrix, the rows of a pandas table, the partitions of a Dask one
    (whose length is unknown until computed)."""
    if hasattr(X, "columns"):
        where = (f"in {X.npartitions} partitions" if hasattr(X, "npartitions")
                 else f"of {len(X)} rows")
        return f"a table of ({', '.join(map(str, X.columns))}) {where}"
    return "x".join(str(n) for n in X.shape)


def _in_memory(values, client):
    if hasattr(values, "compute"):
        values = client.compute(values).result() if client is not None else values.compute()
    return np.asarray(values)


def _has_tqdm():
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True
