"""The RLlib example's metric formatting, which needs no Ray: RLlib reports
numpy scalars and NaN, and --json must print strict JSON."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np


def _example():
    path = Path(__file__).resolve().parent.parent / "examples" / "rllib_ppo.py"
    spec = importlib.util.spec_from_file_location("rllib_ppo_example", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_metrics_take_numpy_scalars_and_never_print_nan():
    ex = _example()
    # The vector runners' return mean is an np.float32 (their rewards are float32).
    assert ex._round(np.float32(-25.0)) == -25.0 and ex._round(np.float64(1.23456)) == 1.235
    assert ex._round(7) == 7.0 and ex._round(np.int64(7)) == 7.0
    for none in (float("nan"), np.float32("nan"), float("inf"), None, True, "1"):
        assert ex._round(none) is None, none
    assert ex._count(np.float64(4.0)) == 4 and ex._count(float("nan")) == 0 and ex._count(None) == 0
    row = {"a": ex._round(np.float32("nan")), "b": ex._round(np.float32(2.5))}
    assert json.loads(json.dumps(row, allow_nan=False)) == {"a": None, "b": 2.5}
