"""SpiderEnv: gymnasium's checker, seeding, infos, errors, and agreement
with the Go package itself."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from conftest import REPO, masked_random
from spider_env import SpiderEnv, SpiderError, SpiderVectorEnv

# Warnings check_env may give that are expected: bounds of [0, 1] float boxes,
# the per-suit run counters of absent suits (fixed at 0, so low == high),
# and, for a bare env, the lack of a spec.
_EXPECTED = ("lower bound", "upper bound", "maximum and minimum values are equal", "not having a spec")


def _checked(env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("obs", ["compact", "float32"])
def test_check_env(server, obs):
    env = SpiderEnv(obs=obs, render_mode="ansi", address=server)
    try:
        msgs = _checked(env)
    finally:
        env.close()
    assert all(any(x in m for x in _EXPECTED) for m in msgs), msgs


@pytest.mark.parametrize("obs", ["compact", "float32"])
def test_check_env_made(obs):
    """Through gymnasium.make, so the checker also makes envs from the spec
    (render modes, double close), each starting its own server."""
    env = gym.make("Spider-v0", obs=obs, rules="cardems", suits=2)
    try:
        assert env.spec.id == "Spider-v0"
        msgs = _checked(env.unwrapped)
    finally:
        env.close()
    assert all(any(x in m for x in _EXPECTED[:3]) for m in msgs), msgs


def test_spaces_follow_make(server):
    env = SpiderEnv(address=server, face_up_slots=20)
    try:
        spec = env.spider_spec
        assert env.observation_space.shape == spec["obs_shape"] and env.observation_space.dtype == np.uint8
        assert (env.observation_space.high == spec["obs_high"]).all()
        assert env.observation_space.shape[0] < 806  # fewer slots, shorter observation
        assert env.action_space == gym.spaces.Discrete(1081)
        obs, info = env.reset(seed=0)
        assert obs in env.observation_space
    finally:
        env.close()
    env = SpiderEnv(address=server, obs="float32")
    try:
        assert env.observation_space.dtype == np.float32
        obs, _ = env.reset(seed=0)
        assert obs.dtype == np.float32 and obs in env.observation_space
    finally:
        env.close()


def _rollout(env, seed, steps, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    obs, info = env.reset(seed=seed)
    seq = [obs.copy()]
    for _ in range(steps):
        a = int(masked_random(rng, info["action_mask"][None])[0])
        obs, r, term, trunc, info = env.step(a)
        seq.append(obs.copy())
        if term or trunc:
            obs, info = env.reset()
            seq.append(obs.copy())
    return seq


def test_same_seed_same_game(server):
    a, b = SpiderEnv(address=server), SpiderEnv(address=server, max_steps=1000)
    try:
        sa, sb = _rollout(a, 42, 300), _rollout(b, 42, 300)
        assert len(sa) == len(sb) and all((x == y).all() for x, y in zip(sa, sb, strict=True))
        sc = _rollout(b, 43, 10)
        assert not (sa[0] == sc[0]).all()
        # Unseeded first resets draw their seed from np_random, which a
        # seeded reset fixes; then reset() goes on deterministically.
        a.reset(seed=9)
        b.reset(seed=9)
        assert (a.reset()[0] == b.reset()[0]).all()
    finally:
        a.close()
        b.close()


def test_unseeded_envs_differ(server):
    a, b = SpiderEnv(address=server), SpiderEnv(address=server)
    try:
        oa, ob = a.reset()[0], b.reset()[0]
        assert not (oa == ob).all()
        assert a.np_random_seed != b.np_random_seed
    finally:
        a.close()
        b.close()


def test_infos_and_episode_end(server):
    env = SpiderEnv(address=server, max_steps=25, render_mode="ansi")
    try:
        obs, info = env.reset(seed=4)
        assert set(info) == {"action_mask", "score", "runs", "moves", "num_legal", "illegal"}
        assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (1081,)
        assert info["action_mask"].sum() == info["num_legal"] > 0
        assert info["score"] == 500 and info["moves"] == 0 and info["runs"] == 0
        assert (env.action_masks() == info["action_mask"].astype(bool)).all()
        assert env.action_masks().dtype == np.bool_
        assert "score 500" in env.render() and "moves 0" in env.render()
        rng = np.random.default_rng(3)
        total = 0.0
        for t in range(1, 26):
            a = int(masked_random(rng, info["action_mask"][None])[0])
            obs, reward, term, trunc, info = env.step(a)
            assert isinstance(reward, float) and type(term) is bool and type(trunc) is bool
            assert not info["illegal"] and info["moves"] == t
            total += reward
            assert info["score"] == 500 + total
            if t < 25:
                assert not (term or trunc) and "spider_episode" not in info
        assert trunc and not term
        # "episode" is left to wrappers such as RecordEpisodeStatistics.
        assert "episode" not in info
        assert info["spider_episode"] == {"r": total, "l": 25, "won": False, "runs": info["runs"]}
        # An ended game: no legal move, but an all-ones mask, so a masked
        # sampler (a vectorizer's autoreset step) never meets an empty row.
        assert info["num_legal"] == 0 and (info["action_mask"] == 1).all()
        assert env.action_masks().all()
        # As before the first reset (the server would refuse the step as
        # episode_over; the env does not send it).
        with pytest.raises(gym.error.ResetNeeded, match="has ended"):
            env.step(0)
        obs, info = env.reset()
        assert info["moves"] == 0 and info["num_legal"] > 0
    finally:
        env.close()


def test_illegal_policies(server):
    env = SpiderEnv(address=server)  # noop by default
    try:
        obs, info = env.reset(seed=1)
        bad = int(np.flatnonzero(info["action_mask"] == 0)[0])
        obs2, r, term, trunc, info2 = env.step(bad)
        assert info2["illegal"] and r == 0.0 and not term and (obs2 == obs).all()
        assert info2["moves"] == 1  # a refused try still uses a step of the limit
        # Outside the action space, whatever the size: refused, nothing played.
        for bad_id in (1081, 5000, 65535, 65536, -1, 2**70):
            with pytest.raises(ValueError, match="outside the action space"):
                env.step(bad_id)
        # Not an integer: refused rather than truncated or taken as 0/1.
        for not_id in (3.7, 1080.9, 2.0, "1080", True, np.bool_(False), None, [1]):
            with pytest.raises((TypeError, ValueError)):
                env.step(not_id)
        assert env.step(np.int16(bad))[4]["moves"] == 2  # numpy integers are ids
    finally:
        env.close()
    env = SpiderEnv(address=server, illegal="noop", illegal_penalty=2.5)
    try:
        obs, info = env.reset(seed=1)
        _, r, *_ = env.step(bad)
        assert r == -2.5
    finally:
        env.close()
    env = SpiderEnv(address=server, illegal="lose")
    try:
        env.reset(seed=1)
        _, r, term, trunc, info = env.step(bad)
        assert term and info["illegal"] and info["spider_episode"]["l"] == 1
    finally:
        env.close()
    env = SpiderEnv(address=server, illegal="error")
    try:
        obs, info = env.reset(seed=1)
        with pytest.raises(SpiderError) as e:
            env.step(bad)
        assert e.value.code == "bad_action" and "illegal action" in str(e.value) and f"(id {bad})" in str(e.value)
        # Refused, so nothing changed: a legal action still plays from the deal.
        obs2, r, term, trunc, info2 = env.step(int(np.argmax(info["action_mask"])))
        assert info2["moves"] == 1 and not info2["illegal"]
    finally:
        env.close()


def test_bad_config_and_closed_env(server):
    with pytest.raises(SpiderError) as e:
        SpiderEnv(address=server, suits=3)
    assert e.value.code == "bad_config"
    with pytest.raises(ValueError):
        SpiderEnv(address=server, mask="words")
    with pytest.raises(ValueError):
        SpiderEnv(address=server, render_mode="human")
    env = SpiderEnv(address=server)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(SpiderError) as e:
        env.step(0)
    assert e.value.code == "closed"


def test_reset_after_close_opens_anew(server):
    """As Gymnasium's own envs (and SB3's check_env, which resets after
    closing) expect, a reset after close() plays on: on a new server of its
    own, or the given address again, dealing what it would have dealt."""
    twin = SpiderEnv(address=server)
    try:
        want = [twin.reset(seed=4)[0], twin.reset()[0], twin.reset()[0], twin.reset(seed=9)[0]]
    finally:
        twin.close()
    for address in (None, server):
        env = SpiderEnv(address=address)
        first = env.server
        env.reset(seed=4)
        env.reset()
        env.close()
        assert first is None or not first.running
        obs, info = env.reset()  # the stream's next deal, on a new connection
        assert (obs == want[2]).all() and info["score"] == 500
        if address is None:
            assert env.server is not None and env.server is not first and env.server.running
        obs, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        assert info["moves"] == 1
        env.close()
        assert (env.reset(seed=9)[0] == want[3]).all()
        env.close()
    # An env closed before any reset opens anew too.
    env = SpiderEnv(address=server)
    env.close()
    assert (env.reset(seed=4)[0] == want[0]).all()
    env.close()
    # A server that now makes another game is refused.
    env.spider_spec = {**env.spider_spec, "obs_shape": (1,)}
    with pytest.raises(SpiderError) as e:
        env.reset()
    assert e.value.code == "bad_config" and "make a new env" in e.value.message
    # A connection a fault closed (here its server died): a step says so,
    # and a reset opens anew, as after close(), and deals the stream's next
    # game. (It raised "closed" until the user called close(), with nothing
    # saying so.)
    env = SpiderEnv()
    env.reset(seed=4)
    env.reset()
    dead = env.server
    dead.proc.kill()
    dead.proc.wait()
    with pytest.raises(SpiderError):
        env.step(0)
    with pytest.raises(SpiderError) as e:
        env.step(0)
    assert e.value.code == "closed"
    assert (env.reset()[0] == want[2]).all()
    assert env.server is not dead and env.server.running
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    env.close()


def test_registered_make():
    env = gym.make("Spider-v0", rules="cardems", suits=1, max_steps=50)
    try:
        assert isinstance(env.unwrapped, SpiderEnv)
        assert env.unwrapped.spider_spec["rules"] == "cardems"
        assert env.unwrapped.spider_spec["max_steps"] == 50
        obs, info = env.reset(seed=1)
        obs, r, term, trunc, info = env.step(int(np.argmax(info["action_mask"])))
        assert info["moves"] == 1
        # Attribute access through the wrappers, as sb3-contrib does it.
        assert env.get_wrapper_attr("action_masks")().shape == (1081,)
    finally:
        env.close()
    assert env.unwrapped.server.proc.poll() is not None
    env = gym.make("Spider-v0", render_mode="ansi")
    try:
        env.reset(seed=2)
        assert "classic 1-suit" in env.render()
    finally:
        env.close()


# ---------------------------------------------------------------------------
# Agreement with the Go package: a Go program run with `go run -overlay`
# (so no file is written into the repository) plays the same seeds with
# env.Batch and env.Env; Python must see exactly the same bytes.

_GO_GOLDEN = r"""
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"

	"github.com/spiderenv/spider/env"
)

func main() {
	rs, _ := env.ParseRuleSet(os.Args[1])
	suits, _ := strconv.Atoi(os.Args[2])
	enc, _ := env.ParseEncoding(os.Args[3])
	n, _ := strconv.Atoi(os.Args[4])
	steps, _ := strconv.Atoi(os.Args[5])
	maxSteps, _ := strconv.Atoi(os.Args[6])
	seed, _ := strconv.ParseUint(os.Args[7], 10, 64)
	r := env.MustRules(env.Options{RuleSet: rs, Suits: suits, Encoding: enc, MaxSteps: maxSteps})
	b, err := env.NewBatch(r, env.BatchOptions{N: n, Workers: 1, Autoreset: env.SameStep})
	if err != nil {
		panic(err)
	}
	out := json.NewEncoder(os.Stdout)
	obsHex := func() string {
		var buf bytes.Buffer
		if b.ObsFloat32 != nil {
			binary.Write(&buf, binary.LittleEndian, b.ObsFloat32)
		} else {
			buf.Write(b.ObsCompact)
		}
		return hex.EncodeToString(buf.Bytes())
	}
	// The single Env dealt from game 0's first seed.
	e := env.New(r)
	o, _ := e.Reset(env.EpisodeSeed(seed, 0, 0))
	var single bytes.Buffer
	if o.Float32 != nil {
		binary.Write(&single, binary.LittleEndian, o.Float32)
	} else {
		single.Write(o.Compact)
	}
	out.Encode(map[string]any{"single": hex.EncodeToString(single.Bytes())})
	b.Reset(seed)
	actions := make([]env.Action, n)
	for t := 0; t <= steps; t++ {
		out.Encode(map[string]any{
			"obs": obsHex(), "masks": hex.EncodeToString(b.Masks), "rewards": b.Rewards,
			"terminated": b.Terminated, "truncated": b.Truncated, "score": b.Score, "has_final": b.HasFinal,
		})
		// The policy Python replays: the ((t*7+i) mod num_legal)-th legal action.
		for i := 0; i < n; i++ {
			k := (t*7 + i) % int(b.NumLegal[i])
			for a, m := range b.Masks[i*env.NumActions : (i+1)*env.NumActions] {
				if m == 1 {
					if k == 0 {
						actions[i] = env.Action(a)
						break
					}
					k--
				}
			}
		}
		if err := b.Step(actions); err != nil {
			panic(err)
		}
	}
}
"""


def _go_golden(tmp_path, *args) -> list[dict]:
    go = shutil.which("go")
    if go is None:
        pytest.skip("no go toolchain to compute the reference")
    src = tmp_path / "main.go"
    src.write_text(_GO_GOLDEN)
    virtual = REPO / "internal" / "pyclientgolden" / "main.go"
    assert not virtual.parent.exists()
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"Replace": {str(virtual): str(src)}}))
    p = subprocess.run(
        [go, "run", "-overlay", str(overlay), "./internal/pyclientgolden", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


@pytest.mark.parametrize(
    "rules,suits,obs",
    [("classic", 1, "compact"), ("cardems", 2, "float32")],
)
def test_matches_go_package(server, tmp_path, rules, suits, obs):
    n, steps, max_steps, seed = 3, 80, 30, 42
    golden = _go_golden(tmp_path, rules, suits, obs, n, steps, max_steps, seed)
    single, frames = golden[0]["single"], golden[1:]
    assert len(frames) == steps + 1
    dtype = np.uint8 if obs == "compact" else np.dtype("<f4")

    env = SpiderEnv(address=server, rules=rules, suits=suits, obs=obs, max_steps=max_steps)
    try:
        o, _ = env.reset(seed=seed)
        assert o.tobytes().hex() == single
    finally:
        env.close()

    venv = SpiderVectorEnv(
        n, address=server, rules=rules, suits=suits, obs=obs, max_steps=max_steps, autoreset_mode="same-step"
    )
    try:
        o, info = venv.reset(seed=seed)
        r = term = trunc = None
        ended = 0
        for t, g in enumerate(frames):
            assert o.dtype == dtype
            assert o.tobytes().hex() == g["obs"], f"step {t}: observations differ"
            assert info["action_mask"].astype(np.uint8).tobytes().hex() == g["masks"], f"step {t}: masks differ"
            if t > 0:
                assert r.tolist() == g["rewards"] and term.tolist() == g["terminated"]
                assert trunc.tolist() == g["truncated"] and info["score"].tolist() == g["score"]
                assert ("final_obs" in info) == any(g["has_final"])
                ended += sum(g["has_final"])
            legal = [np.flatnonzero(m) for m in info["action_mask"]]
            actions = np.array([lg[(t * 7 + i) % len(lg)] for i, lg in enumerate(legal)])
            if t < steps:
                o, r, term, trunc, info = venv.step(actions)
        assert ended >= n  # max_steps 30 in 80 steps: every game restarted
    finally:
        venv.close()


def test_hint_is_a_legal_action_with_a_reason():
    from spider_env import SpiderEnv, SpiderVectorEnv

    env = SpiderEnv(suits=2)
    try:
        env.reset(seed=11)
        for _ in range(20):
            action, reason = env.hint()
            assert env.action_masks()[action] and reason
            _, _, terminated, truncated, _ = env.step(action)
            assert not env.unwrapped._last["illegal"][0]
            if terminated or truncated:
                break
    finally:
        env.close()
    venv = SpiderVectorEnv(4, suits=1)
    try:
        venv.reset(seed=3)
        for i in range(4):
            action, reason = venv.hint(i)
            assert venv.action_masks()[i, action] and reason
    finally:
        venv.close()


def test_hint_after_the_episode_is_reset_needed():
    from spider_env import SpiderEnv

    env = SpiderEnv(max_steps=1)
    try:
        env.reset(seed=4)
        action, _ = env.hint()
        _, _, terminated, truncated, _ = env.step(action)
        assert truncated and not terminated
        with pytest.raises(gym.error.ResetNeeded, match="has ended"):
            env.hint()
        env.reset()
        action, _ = env.hint()
        assert env.action_masks()[action]
    finally:
        env.close()


def test_first_reset_draws_from_a_given_generator(server):
    """An env given its generator before its first reset (np_random set, as
    a wrapper or a vector env may) deals its first game from it: two envs
    given equal generators deal the same game, the one of the seed it draws."""
    envs = [SpiderEnv(address=server) for _ in range(3)]
    try:
        for env in envs[:2]:
            env.np_random = np.random.default_rng(11)
        (o1, _), (o2, _) = (env.reset() for env in envs[:2])
        assert np.array_equal(o1, o2)
        o3, _ = envs[2].reset(seed=int(np.random.default_rng(11).integers(0, 2**63)))
        assert np.array_equal(o1, o3)
    finally:
        for env in envs:
            env.close()


def test_bad_values_are_value_errors():
    """A game option the server refuses is a ValueError, as a bad mask or
    render_mode is, and still a SpiderError with its code; an episode_key
    of another type is refused at once (it failed at the first episode's
    end, that step's results lost)."""
    for bad in ({"suits": 3}, {"rules": "nope"}, {"illegal": "foo"}, {"mask": "foo"}):
        with pytest.raises(ValueError) as e:
            SpiderEnv(**bad)
        if "mask" not in bad:
            assert isinstance(e.value, SpiderError) and e.value.code == "bad_config"
    with pytest.raises(ValueError):
        SpiderVectorEnv(2, suits=3)
    with pytest.raises(TypeError, match="episode_key"):
        SpiderEnv(episode_key=3)  # type: ignore[arg-type]
