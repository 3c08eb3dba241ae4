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
    ws, bs = [], []
    for w, b in zip(m["w"], m["b"], strict=True):
        bias = np.frombuffer(b, "<f4")
        ws.append(np.frombuffer(w, "<f4").reshape(-1, len(bias)))
        bs.append(bias)
    return spec, ws, bs


def logits(spec: dict, ws: list[np.ndarray], bs: list[np.ndarray], obs: np.ndarray) -> np.ndarray:
    """The action logits, by the network's architecture."""
    if spec.get("arch") == "columns":
        return column_logits(spec, ws, bs, obs)
    # An MLP: tanh layers, then the action logits (the last layer is the
    # value head).
    h = obs.astype(np.float64)
    for w, b in zip(ws[:-2], bs[:-2], strict=True):
        h = np.tanh(h @ w + b)
    out: np.ndarray = h @ ws[-2] + bs[-2]
    return out


def column_logits(spec: dict, ws: list[np.ndarray], bs: list[np.ndarray], obs: np.ndarray) -> np.ndarray:
    """A columns network, as PROTOCOL.md's observation layout and the nn
    package's documentation describe it: one encoder per column, a mixing
    layer, and each move scored from its source and destination columns."""
    n, k, p = 10, 12, spec["pair"]
    o = obs.astype(np.float64)
    down, up = o[0:10], o[10:20]
    slots = o[26:].reshape(n, spec["game"]["face_up_slots"], -1)
    seqs = np.array([sequences(c) for c in slots], dtype=np.float64) / 13
    cols = np.concatenate(
        [
            np.stack([down, up, (down == 0) & (up == 0), down == 0], axis=1),
            seqs,
            slots.reshape(n, -1),
        ],
        axis=1,
    )
    e = np.tanh(cols @ ws[0] + bs[0])
    m = np.tanh(np.concatenate([e.reshape(-1), o[20:26]]) @ ws[1] + bs[1])
    z = np.tanh(e @ ws[2] + bs[2] + (m @ ws[3] + bs[3]))
    u = (z @ ws[4] + bs[4]).reshape(n, k, p + 1)
    v = z @ ws[5] + bs[5]
    out = np.empty(spec["num_actions"])
    a = 0
    for src in range(n):
        for dst in range(n):
            if dst != src:
                out[a : a + k] = u[src, :, :p] @ v[dst, :p] + u[src, :, p] + v[dst, p]
                a += k
    out[a] = (m @ ws[6] + bs[6])[0]
    return out


def sequences(slots: np.ndarray) -> tuple[int, int]:
    """How many cards at a column's top (slot 0) descend one rank at a
    time: in one suit, and in any suits."""
    shown = [(int(c[:13].argmax()), int(c[13:].argmax()) if len(c) > 13 else 0) for c in slots if c[:13].any()]
    suited = anysuit = min(len(shown), 1)
    for i in range(1, len(shown)):
        if shown[i][0] != shown[i - 1][0] + 1:
            break
        anysuit += 1
        if suited == i and shown[i][1] == shown[i - 1][1]:
            suited += 1
    return suited, anysuit


def test_models_are_shipped():
    names = {p.name for p in MODELS}
    assert {
        "classic-1suit.spider",
        "classic-1suit-warmstart.spider",
        "classic-1suit-columns.spider",
        "classic-1suit-columns-warmstart.spider",
    } <= names
    for p in MODELS:
        assert p.stat().st_size < 10 << 20, p


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_hint_is_the_networks_choice(spider_bin, path):
    spec, ws, bs = load(path)
    game = spec["game"]
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
            z = logits(spec, ws, bs, obs)
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
