"""``dask-strads``: fit, predict, recommend and describe models from cluster scripts.

Exit codes: 0 success, 2 a command line that cannot run (unknown options, parameters or
formats), 1 a command that failed (unreadable data, a failed fit, a lost cluster), with one line
on stderr saying why (the traceback with ``--debug``).
"""
import argparse
import logging
import sys

from ..log import logger
from . import commands
from .connect import connect
from .parameters import ESTIMATORS, UsageError

FORMATS = ("svmlight", "matrixmarket", "bagofwords", "parquet", "csv", "npz", "npy")


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse's usage errors (2) and --help (0)
        return stop.code
    if args.quiet:
        logger.setLevel(logging.WARNING)
    client = None
    try:
        client = connect(args)
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

    fit = sub.add_parser("fit", parents=[common], help="fit a model to a data file and save it")
    fit.add_argument("estimator", choices=sorted(ESTIMATORS))
    fit.add_argument("input", metavar="INPUT", help="the data file")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL",
                     help="where to save the model (.npz)")
    fit.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="an estimator parameter (repeat for several)")
    fit.add_argument("--format", choices=FORMATS, help="the input's format (default: from "
                     "its name)")
    fit.add_argument("--checkpoint-dir", metavar="DIR",
                     help="write checkpoints there and resume from them")
    fit.set_defaults(run=commands.fit)

    predict = sub.add_parser("predict", parents=[common],
                             help="predictions (Lasso), topic rows (LDA) or ratings (MF)")
    predict.add_argument("model", metavar="MODEL")
    predict.add_argument("input", metavar="INPUT", help="data (MF: a table of user, item)")
    predict.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                         help=".npy, .csv or .parquet")
    predict.add_argument("--format", choices=FORMATS, help="the input's format")
    predict.set_defaults(run=commands.predict)

    recommend = sub.add_parser("recommend", parents=[common],
                               help="the best items for users (MF)")
    recommend.add_argument("model", metavar="MODEL")
    recommend.add_argument("--users", required=True, metavar="FILE",
                           help="user ids: .txt (one a line), .csv/.parquet (column user or "
                                "the first), .npy")
    recommend.add_argument("-n", type=_positive_int, default=10,
                           help="items per user (default 10)")
    recommend.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                           help=".csv or .parquet (user, rank, item), or .npy")
    recommend.set_defaults(run=commands.recommend)

    info = sub.add_parser("info", parents=[common], help="describe a saved model")
    info.add_argument("model", metavar="MODEL")
    info.set_defaults(run=commands.info)
    return parser
