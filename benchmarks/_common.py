"""What the benchmark scripts share: their command line and the load they start under."""
import argparse
import os
import warnings

from sklearn.exceptions import ConvergenceWarning


def arguments(doc, repeats, extra=()):
    """Parse ``--repeats`` and ``--markdown`` (plus ``extra``: ``(flag, options)`` pairs),
    silence ConvergenceWarning (the fits run to their own stopping rule) and print the load."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--markdown", action="store_true")
    for flag, options in extra:
        parser.add_argument(flag, **options)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    print(f"load average at start: {os.getloadavg()}")
    return args
