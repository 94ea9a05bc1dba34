"""docs/writing-a-program.md runs as written: its Python blocks, executed in order in one
namespace as a script (``__name__ == "__main__"``, so its cluster of worker processes starts).
The blocks check their results against scikit-learn's Ridge themselves."""
import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "writing-a-program.md"


def code_blocks():
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)


def test_the_guide_has_its_example():
    blocks = code_blocks()
    assert len(blocks) >= 6
    assert any("class BlockRidge(Program)" in block for block in blocks)
    assert any("LocalCluster(" in block and "processes=True" in block for block in blocks)


@pytest.mark.cluster  # the guide's LocalCluster
def test_the_guide_runs_as_written(capsys):
    namespace = {"__name__": "__main__"}
    for number, block in enumerate(code_blocks()):
        try:
            exec(compile(block, f"{GUIDE.name}, block {number}", "exec"), namespace)
        except Exception as error:  # name the block that failed
            pytest.fail(f"block {number} of {GUIDE.name} raised {error!r}:\n{block}")
    printed = capsys.readouterr().out
    assert "worker processes" in printed
    # the table of step rules in the guide is what the code prints
    assert re.search(r"line search\s+88 rounds", printed), printed
    assert re.search(r"full\s+200 rounds, last gradient 7.0e-03", printed), printed
