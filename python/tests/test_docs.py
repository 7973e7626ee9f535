"""The ten-line examples of README.md and docs/Python.md run as written."""

import os
import re

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


@pytest.mark.parametrize("doc", ["README.md", "docs/Python.md"])
def test_example_runs(doc):
    with open(os.path.join(ROOT, doc)) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, f"{doc} has no python example"
    ns = {}
    exec(compile(blocks[0], doc, "exec"), ns)
    o, lse = ns["o"], ns["lse"]
    assert o.shape == (2, 8, 64) and lse.shape == (2, 8)
    assert np.isfinite(o.astype(np.float32)).all() and np.isfinite(lse).all()
