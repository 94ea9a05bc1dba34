"""benchmarks/farm.py on a farm of four workers: its three processes start and stop, the round
clock sees every round, and a round costs the scheduler some CPU and is the plane's P + 2 tasks
(the Lasso's at most P + 3)."""
import argparse
import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import farm

P = 4


def farm_processes():
    return [p for p in psutil.Process().children(recursive=True)
            if "--scheduler-file" in " ".join(p.cmdline())]


def test_a_farm_measures_the_scheduler_per_round():
    args = argparse.Namespace(programs="mf", repeats=1, idle_seconds=1.0, timeout=300)
    found = farm.run_farm(farm.HERE, P, args)
    assert "failed" not in found, found.get("failed")
    assert farm_processes() == []
    assert found["idle"] >= 0
    (result,) = found["results"]
    (run,) = result["runs"]
    assert run["rounds"] == 10  # scaling.py's MF: 5 iterations of two rounds at c = 1
    assert run["timed rounds"] == run["rounds"] - 1
    assert run["tasks"] == P + 2
    assert run["cpu / round"] > 0 and run["cpu / task"] > 0
    assert run["wall / round"] > 0
