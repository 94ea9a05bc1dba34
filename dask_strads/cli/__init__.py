"""``dask-strads``: fit, predict, recommend and describe models from cluster scripts.

Exit codes: 0 success, 2 a command line that cannot run (unknown options, parameters or
formats), 1 a command that failed (unreadable data, a failed fit, a lost cluster), with one line
on stderr saying why (the traceback with ``--debug``).
"""
import argparse
import logging
import sys
import textwrap

from .. import io
from ..log import logger
from . import commands
from .connect import connect
from .files import absolute
from .parameters import ESTIMATORS, UsageError, estimator_class, settable_defaults

#: The arguments naming files that the workers of a cluster read.
READ_ON_WORKERS = ("input", "checkpoint_dir")


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse's usage errors (2) and --help (0)
        return stop.code
    level = logger.level
    if args.quiet:
        logger.setLevel(logging.WARNING)
    client = None
    try:
        client = connect(args)
        if client is not None:  # the workers resolve a relative path against their own folder
            for name in READ_ON_WORKERS:
                if getattr(args, name, None):
                    setattr(args, name, absolute(getattr(args, name)))
        args.run(args, client)
        return 0
    except UsageError as error:
        if args.debug:
            raise
        print(f"dask-strads {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dask-strads: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if args.debug:
            raise
        print(f"dask-strads {args.command}: failed: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    finally:
        logger.setLevel(level)  # main() may run in a longer-lived process (a test, a script)
        if client is not None:
            client.close()


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _parser():
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_mutually_exclusive_group()
    where.add_argument("--scheduler-address", metavar="ADDR",
                       help="a Dask scheduler, e.g. tcp://10.0.0.1:8786 (default: the embedded "
                            "default: this process, or a local cluster for large data)")
    where.add_argument("--scheduler-file", metavar="FILE",
                       help="the file `dask scheduler --scheduler-file FILE` wrote")
    common.add_argument("--quiet", action="store_true", help="no progress on stderr")
    common.add_argument("--debug", action="store_true", help="show tracebacks of errors")

    parser = argparse.ArgumentParser(
        prog="dask-strads", description="Model-parallel machine learning on Dask: fit models from "
        "data files, save them, predict and recommend.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    fit = sub.add_parser("fit", parents=[common], help="fit a model to a data file and save it",
                         epilog=_parameters_of_estimators(),
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    fit.add_argument("estimator", choices=sorted(ESTIMATORS))
    fit.add_argument("input", metavar="INPUT", help="the data file")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL",
                     help="where to save the model (.npz; an existing folder is refused)")
    fit.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="an estimator parameter (repeat for several; each once): see below")
    fit.add_argument("--format", choices=tuple(io.FORMATS),
                     help="the input's format (default: from its name)")
    fit.add_argument("--checkpoint-dir", metavar="DIR",
                     help="write checkpoints there and resume from them")
    fit.set_defaults(run=commands.fit)

    predict = sub.add_parser(
        "predict", parents=[common],
        help="predictions (Lasso, ElasticNet, GeneralizedLinearRegressor, LogisticRegression, "
             "LinearSVC), topic rows (LDA) or ratings (MF)",
        description="MODEL: a model file of Lasso, ElasticNet, GeneralizedLinearRegressor, "
                    "LogisticRegression or LinearSVC (column prediction), "
                    "LatentDirichletAllocation (columns topic_0...) or MatrixFactorization "
                    "(columns user, item, prediction). An ImplicitMatrixFactorization or a "
                    "BayesianPersonalizedRanking ranks items: use recommend.")
    predict.add_argument("model", metavar="MODEL")
    predict.add_argument("input", metavar="INPUT", help="data (MF: a table of user, item)")
    predict.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                         help=".npy, .csv or .parquet")
    predict.add_argument("--format", choices=tuple(io.FORMATS), help="the input's format")
    predict.add_argument("--unknown", choices=("predict", "error"), default="predict",
                         help="MF pairs of a user or item not in the fit: predict them from "
                              "the global mean and the known bias, as "
                              "MatrixFactorization.predict does, saying how many on stderr "
                              "(default), or refuse the file")
    predict.set_defaults(run=commands.predict)

    recommend = sub.add_parser(
        "recommend", parents=[common], help="the best items for users (MF, implicit MF)",
        description="MODEL: a model file of MatrixFactorization or "
                    "ImplicitMatrixFactorization. Every user id must be one the model was "
                    "fitted on. With --all, every fitted user's, computed a block of users "
                    "at a time on the workers holding their factors and written by them.")
    recommend.add_argument("model", metavar="MODEL")
    whom = recommend.add_mutually_exclusive_group(required=True)
    whom.add_argument("--users", metavar="FILE",
                      help="user ids: .txt (one a line), .csv/.parquet (column user or "
                           "the first), .npy")
    whom.add_argument("--all", action="store_true",
                      help="every fitted user; OUTPUT a new (or empty) folder ending in "
                           ".parquet, a Parquet file per block of users (user, rank, item, "
                           "score)")
    recommend.add_argument("-n", type=_positive_int, default=10,
                           help="items per user (default 10)")
    recommend.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                           help=".csv or .parquet (user, rank, item), or .npy")
    recommend.set_defaults(run=commands.recommend)

    info = sub.add_parser("info", parents=[common], help="describe a saved model")
    info.add_argument("model", metavar="MODEL")
    info.set_defaults(run=commands.info)
    return parser


def _parameters_of_estimators():
    """The parameters -p sets for each estimator, with their defaults, for fit --help."""
    lines = ["parameters (-p NAME=VALUE) and their defaults:"]
    for name, class_name in sorted(ESTIMATORS.items()):
        defaults = settable_defaults(estimator_class(name))
        text = ", ".join(f"{key}={value!r}" for key, value in defaults.items())
        lines.append(f"  {name} ({class_name}):")
        lines.extend(textwrap.wrap(text, width=96, initial_indent="    ",
                                   subsequent_indent="    ", break_on_hyphens=False))
    lines.append("checkpoint_dir is set by --checkpoint-dir; a callback cannot be given here.")
    return "\n".join(lines)
