"""SpiderConfig, the one game configuration: every field reaches the make
request through every way of making a game, and comes back in the reply;
nothing else in the package names a game option; the typed replies match
what the server sends; the version and py.typed ship with the package."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.resources
import inspect
import typing
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import spider_env
from spider_env import (
    Client,
    HelloReply,
    HintReply,
    MakeReply,
    SpiderConfig,
    SpiderEnv,
    SpiderVectorEnv,
    StepReply,
    envs,
)

FIELDS = [f.name for f in dataclasses.fields(SpiderConfig)]


def _kind(name: str) -> type:
    """The field's type without its None."""
    (kind,) = [t for t in typing.get_args(typing.get_type_hints(SpiderConfig)[name]) if t is not type(None)]
    return kind


def _sample(name: str) -> Any:
    """A value of the field's type. The server would refuse many of them;
    these tests stop the make request before it is sent."""
    return {str: "sample-value", int: 7, float: 0.5, bool: True}[_kind(name)]


class _Stop(Exception):
    pass


@pytest.fixture
def make_requests(monkeypatch):
    """The make requests sent from now on; each is stopped before sending
    (hello and the rest go through)."""
    sent: list[dict[str, Any]] = []
    real = Client.request

    def spy(self, req):
        if req.get("op") == "make":
            sent.append(dict(req))
            raise _Stop
        return real(self, req)

    monkeypatch.setattr(Client, "request", spy)
    return sent


def _makers(server):
    """Every way of making a game with game keyword arguments."""
    return {
        "SpiderEnv": lambda config=None, **kw: SpiderEnv(config, address=server, **kw),
        "SpiderVectorEnv": lambda config=None, **kw: SpiderVectorEnv(3, config, address=server, **kw),
        "gym.make": lambda config=None, **kw: gym.make("Spider-v0", config=config, address=server, **kw),
        "gym.make_vec": lambda config=None, **kw: gym.make_vec(
            "Spider-v0", num_envs=3, vectorization_mode="vector_entry_point", config=config, address=server, **kw
        ),
        "Client.make": lambda config=None, **kw: Client(server.address).make(config, n=2, **kw),
    }


@pytest.mark.parametrize("name", FIELDS)
@pytest.mark.parametrize("maker", list(_makers(None)))
def test_every_field_reaches_make(server, make_requests, name, maker):
    """A field added to SpiderConfig needs no other Python line: each way of
    making a game takes it as a keyword or in config and sends it as it is."""
    make = _makers(server)[maker]
    value = _sample(name)
    with pytest.raises(_Stop):
        make(**{name: value})
    with pytest.raises(_Stop):
        make(SpiderConfig(**{name: value}))
    assert len(make_requests) == 2
    for req in make_requests:
        game = {k: v for k, v in req.items() if k in FIELDS}
        assert game == {name: value}, req


@pytest.mark.parametrize("maker", list(_makers(None)))
def test_defaults_are_the_servers(server, make_requests, maker):
    """A game option not given is not sent: the server's defaults are the only ones."""
    with pytest.raises(_Stop):
        _makers(server)[maker]()
    (req,) = make_requests
    assert not set(req) & set(FIELDS), req
    # Nor does any signature or the registration name a game option.
    for f in (SpiderEnv, SpiderVectorEnv, Client.make):
        assert not set(inspect.signature(f).parameters) & set(FIELDS), f
    assert not set(gym.spec("Spider-v0").kwargs) & set(FIELDS)


def test_config_and_keywords_merge(server, make_requests):
    base = SpiderConfig(rules="cardems", suits=2, max_steps=40)
    for make in _makers(server).values():
        with pytest.raises(_Stop):
            make(base, suits=4, obs="float32")
    assert len(make_requests) == 5
    for req in make_requests:
        assert {k: req[k] for k in FIELDS if k in req} == {
            "rules": "cardems",
            "suits": 4,
            "max_steps": 40,
            "obs": "float32",
        }


@pytest.mark.parametrize("maker", list(_makers(None)))
def test_unknown_game_option(server, monkeypatch, maker):
    started = []
    monkeypatch.setattr(envs, "SpiderServer", lambda *a, **k: started.append(1))
    with pytest.raises(TypeError) as e:
        _makers(server)[maker](colour="red")
    assert "'colour'" in str(e.value) and "rules" in str(e.value)
    with pytest.raises(TypeError) as e:
        SpiderEnv(coulour="red", suits=1)  # no address: fails before starting a server
    assert "'coulour'" in str(e.value)
    with pytest.raises(TypeError):
        SpiderEnv(config={"rules": "classic"})  # a dict is not a SpiderConfig
    assert not started


def test_unknown_option_is_named_as_python_names_it(monkeypatch):
    """An unknown keyword is refused in Python's own words, which tools test
    for: TorchRL's GymEnv passes frameskip to gymnasium.make and drops it
    when the TypeError says "unexpected keyword argument 'frameskip'";
    before, GymEnv("Spider-v0") failed for every user."""
    import gymnasium as gym

    started = []
    monkeypatch.setattr(envs, "SpiderServer", lambda *a, **k: started.append(1))
    with pytest.raises(TypeError) as e:
        gym.make("Spider-v0", frameskip=1)
    assert "unexpected keyword argument 'frameskip'" in str(e.value) and "suits" in str(e.value), e.value
    with pytest.raises(TypeError) as e:
        SpiderConfig.resolve(None, zz=1, aa=2)
    assert "unexpected keyword argument 'aa' (and 'zz'): unknown game options" in str(e.value), e.value
    assert not started


def test_spider_config():
    c = SpiderConfig(rules="cardems", suits=np.int64(2))
    assert c.to_request() == {"rules": "cardems", "suits": 2} and type(c.suits) is int
    assert SpiderConfig().to_request() == {}
    assert all(getattr(SpiderConfig(), n) is None for n in FIELDS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.suits = 4
    for bad in ({"suits": "2"}, {"suits": True}, {"suits": 2.0}, {"rules": 1}, {"obs": b"compact"}):
        with pytest.raises(TypeError) as e:
            SpiderConfig(**bad)
        assert next(iter(bad)) in str(e.value)
    assert SpiderConfig.from_spec({"rules": "classic", "n": 4, "obs_dtype": "uint8"}) == SpiderConfig(rules="classic")
    assert SpiderConfig.resolve(c, suits=4) == SpiderConfig(rules="cardems", suits=4)
    assert SpiderConfig.resolve(None) == SpiderConfig()
    assert SpiderConfig.resolve(c) is c
    # A mapping of the fields stands for the config it names (a gymnasium
    # spec read back from JSON holds one), unknown keys refused by name.
    assert SpiderConfig.resolve({"rules": "cardems", "suits": 2}) == c
    assert SpiderConfig.resolve({"suits": 2}, suits=4) == SpiderConfig(suits=4)
    with pytest.raises(TypeError, match="'suit'"):
        SpiderConfig.resolve({"suit": 2})
    with pytest.raises(TypeError, match="suits"):
        SpiderConfig.resolve({"suits": "2"})
    with pytest.raises(TypeError, match="config must be a SpiderConfig, a mapping of its fields or None"):
        SpiderConfig.resolve([("suits", 2)])  # type: ignore[arg-type]
    # Every field is optional, a str, an int or a float, with None the default.
    hints = typing.get_type_hints(SpiderConfig)
    for f in dataclasses.fields(SpiderConfig):
        assert f.default is None and hints[f.name] in (str | None, int | None, float | None), f.name


# ---------------------------------------------------------------------------
# The server's echo of the game options (make's reply names every one).


def test_make_reply_echoes_every_game_option(server):
    # Fields left out come back as the server's defaults; the Go server's own
    # test sets each option to a non-default value in turn.
    given = SpiderConfig(
        rules="classic", suits=2, max_steps=50, time_per_action_ms=250, face_up_slots=20, obs="float32"
    )
    with Client(server.address) as c:
        spec = c.make()
        missing = [k for k in FIELDS if k not in spec]
        assert not missing, f"the make reply does not echo {missing}"
        assert all(v is not None for v in dataclasses.astuple(spec["config"])), spec["config"]
        defaults = spec["config"]
        spec = c.make(given, n=2)
        assert spec["config"] == dataclasses.replace(defaults, **given.to_request())
        assert all(spec[k] == v for k, v in given.to_request().items())
    env = SpiderEnv(given, address=server)
    try:
        assert env.config == dataclasses.replace(defaults, **given.to_request())
    finally:
        env.close()
    venv = SpiderVectorEnv(2, suits=4, address=server)
    try:
        assert venv.config.suits == 4 and None not in dataclasses.astuple(venv.config)
    finally:
        venv.close()


@pytest.mark.parametrize("name", [n for n in FIELDS if _kind(n) is int])
def test_zero_is_the_server_default(server, name):
    with Client(server.address) as c:
        assert c.make(**{name: 0})["config"] == c.make()["config"]


# ---------------------------------------------------------------------------
# The typed replies hold the keys the server sends.


def test_config_knows_every_game_option(server):
    # Both ways: a field the server does not take would be refused at make,
    # and an option the dataclass lacks could not be set from Python.
    with Client(server.address) as c:
        assert c.server_info["options"] == FIELDS


def test_typed_replies_match_the_server(server):
    with Client(server.address) as c:
        assert set(c.server_info) == set(typing.get_type_hints(HelloReply))
        # Every optional key: same-step's, and the legal lists of a batch in
        # shared memory (where the server offers it).
        spec = c.make(n=2, autoreset="same-step", shm=True, legal=True)
        assert set(typing.get_type_hints(MakeReply)) <= set(spec)
        assert isinstance(spec["config"], SpiderConfig) and isinstance(spec["obs_shape"], tuple)
        assert spec["legal"] is c.shared
        r = c.reset(seed=1)
        keys = set(typing.get_type_hints(StepReply)) - (set() if c.shared else {"legal"})
        assert set(r) == keys
        for key, hint in typing.get_type_hints(StepReply).items():
            if key not in keys:
                continue
            if key not in ("obs", "final_obs"):  # uint8 or float32, as made
                want = typing.get_args(typing.get_args(hint)[1])[0]  # NDArray[want]
                assert r[key].dtype.type is want, key
        h = c.hint(0)
        assert set(h) == set(typing.get_type_hints(HintReply)) and isinstance(h["action"], int)
        c.make(n=2, autoreset="next-step")
        assert set(c.reset(seed=1)) == StepReply.__required_keys__


def test_version_and_py_typed_ship():
    assert spider_env.__version__ == importlib.metadata.version("spider-env")
    assert (importlib.resources.files("spider_env") / "py.typed").is_file()
