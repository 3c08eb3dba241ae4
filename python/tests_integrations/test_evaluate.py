"""spider_env.evaluate with a MaskablePPO model saved by SB3 (marker sb3:
needs torch): python/examples/sb3_evaluate.py, trained for a few hundred
steps, evaluated by spider eval on a dev suite against greedy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import torch

pytestmark = [pytest.mark.sb3]

torch.set_num_threads(1)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sb3_evaluate.py"


def load_example():
    spec = importlib.util.spec_from_file_location("sb3_evaluate", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.limit(300)
def test_a_saved_maskable_ppo_is_evaluated_against_greedy(tmp_path):
    ex = load_example()
    path = str(tmp_path / "tiny.zip")
    ex.train(path, 256)
    assert Path(path).is_file()
    rep = ex.evaluate_model(path, "classic-1suit-dev", ["greedy"], remote_timeout=30.0)
    assert rep["schema"] == "spider-eval/1"
    assert rep["suite"]["name"] == "classic-1suit-dev" and rep["deals"] == 200
    names = [p["policy"] for p in rep["policies"]]
    assert names == ["greedy", "maskable-ppo (remote)"]
    model = rep["policies"][1]
    # The model was masked, so every game was played to its end: no failure.
    assert model["failures"] == 0 and rep["failures"] == []
    assert model["games"] == 200 and model["mean_moves"] > 0
    (c,) = rep["comparisons"]
    assert (c["a"], c["b"], c["pairs"]) == ("greedy", "maskable-ppo (remote)", 200)
    # Greedy wins about 30% of these deals; a few hundred steps of PPO win almost none.
    assert c["only_a_won"] > c["only_b_won"]
