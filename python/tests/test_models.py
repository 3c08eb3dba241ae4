"""The networks shipped in models/: the server's hint from them is the
network's own choice, computed here again from the file with numpy."""

from __future__ import annotations

from pathlib import Path

import msgpack
import numpy as np
import pytest

from spider_env import SpiderEnv, SpiderServer

MODELS = sorted((Path(__file__).resolve().parents[2] / "models").glob("*.spider"))


def load(path: Path) -> tuple[dict, list[np.ndarray], list[np.ndarray]]:
    """The specification, weights and biases of a checkpoint: a msgpack map
    (followed by its checksum, not checked here; the server checks it)."""
    u = msgpack.Unpacker(raw=False)
    u.feed(path.read_bytes())
    m = next(u)
    assert m["kind"] == "spider-policy"
    spec = m["spec"]
    dims = [spec["obs_len"], *spec["hidden"]]
    ws, bs = [], []
    for i, (w, b) in enumerate(zip(m["w"], m["b"], strict=True)):
        rows = dims[min(i, len(dims) - 1)]
        ws.append(np.frombuffer(w, "<f4").reshape(rows, -1))
        bs.append(np.frombuffer(b, "<f4"))
    return spec, ws, bs


def logits(ws: list[np.ndarray], bs: list[np.ndarray], obs: np.ndarray) -> np.ndarray:
    """The policy head: tanh layers, then the action logits (the last
    layer is the value head)."""
    h = obs.astype(np.float64)
    for w, b in zip(ws[:-2], bs[:-2], strict=True):
        h = np.tanh(h @ w + b)
    out: np.ndarray = h @ ws[-2] + bs[-2]
    return out


def test_models_are_shipped():
    names = {p.name for p in MODELS}
    assert {"classic-1suit.spider", "classic-1suit-warmstart.spider"} <= names
    for p in MODELS:
        assert p.stat().st_size < 10 << 20, p


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_hint_is_the_networks_choice(spider_bin, path):
    spec, ws, bs = load(path)
    game = spec["game"]
    assert ws[-2].shape == (spec["hidden"][-1], spec["num_actions"])
    with (
        SpiderServer(spider_bin, args=["--hint", f"nn:{path}"]) as server,
        SpiderEnv(
            address=server,
            rules=game["rules"],
            suits=game["suits"],
            face_up_slots=game["face_up_slots"],
            obs="float32",
        ) as env,
    ):
        obs, info = env.reset(seed=100001)
        checked = 0
        for _ in range(40):
            mask = info["action_mask"].astype(bool)
            z = logits(ws, bs, obs)
            legal = np.flatnonzero(mask)
            order = legal[np.argsort(-z[legal])]
            action, reason = env.hint()
            assert mask[action] and reason
            # A near tie may fall either way between two BLAS libraries.
            if len(order) == 1 or z[order[0]] - z[order[1]] > 1e-3:
                assert action == order[0], (action, order[:3], z[order[:3]])
                checked += 1
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert checked >= 20
