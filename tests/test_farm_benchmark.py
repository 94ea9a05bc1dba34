"""benchmarks/farm.py on a farm of four workers: its three processes start and stop, the round
clock sees every round, and a round costs the scheduler some CPU and is the plane's P + 2 tasks
(the Lasso's at most P + 3)."""
import argparse
import importlib.util
from pathlib import Path

import psutil
import pytest


def _module(path):
    """The module at ``path``, loaded without putting benchmarks/ on sys.path (where its
    lda.py would hide the lda package from every later test)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
farm = _module(BENCHMARKS / "farm.py")
common = _module(BENCHMARKS / "_common.py")

P = 4


def farm_processes():
    return [p for p in psutil.Process().children(recursive=True)
            if "--scheduler-file" in " ".join(p.cmdline())]


def test_a_farm_measures_the_scheduler_per_round():
    args = argparse.Namespace(programs="mf", repeats=1, idle_seconds=1.0, timeout=300, fused=0,
                              epoch_rounds=1)
    others = farm_processes()  # other tests' clusters
    found = farm.run_farm(farm.HERE, P, args)
    assert "failed" not in found, found.get("failed")
    assert farm_processes() == others
    assert found["idle"] >= 0
    (result,) = found["results"]
    (run,) = result["runs"]
    assert run["rounds"] == 10  # scaling.py's MF: 5 iterations of two rounds at c = 1
    assert run["timed rounds"] == run["rounds"] - 1
    assert run["tasks"] == P + 2 and run["graphs"] == run["rounds"]  # a graph a round
    assert run["cpu / round"] > 0 and run["cpu / task"] > 0
    assert run["predicted cpu / round"] == pytest.approx(common.GRAPH_CPU
                                                         + (P + 2) * common.TASK_CPU)
    assert run["wall / round"] > 0


def test_a_farm_measures_fused_epochs_by_the_difference_of_two_fits():
    """Without a callback MF's rounds run as fused epochs: the longer fit's 30 extra rounds
    (20 iterations against 5) cost the scheduler a few transitions each, where a round graph
    of P + 2 tasks costs it some 4 a task."""
    args = argparse.Namespace(programs="mf", repeats=1, idle_seconds=1.0, timeout=300, fused=20,
                              epoch_rounds=1)
    found = farm.run_farm(farm.HERE, P, args)
    assert "failed" not in found, found.get("failed")
    (result,) = found["results"]
    (run,) = result["runs"]
    assert run["rounds"] == 30 and run["timed rounds"] == 30
    assert run["tasks"] < P + 2 and run["transitions"] < P + 2
    assert run["wall / round"] > 0
