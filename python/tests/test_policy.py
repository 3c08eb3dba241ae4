"""Policy agents: spider_env.serve_policy / evaluate against spider eval."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from typing import Any

import msgpack
import numpy as np
import pytest

import spider_env
from spider_env.policy import _read_msg, _send_msg, _to_actions


def first_legal(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return masks.argmax(axis=1)


def games_of(report: dict[str, Any], policy: str) -> dict[int, dict[str, Any]]:
    return {g["seed"]: g for g in report["games"] if g["policy"] == policy}


def assert_same_games(report: dict[str, Any], a: str, b: str, deals: int) -> None:
    ga, gb = games_of(report, a), games_of(report, b)
    assert len(ga) == len(gb) == deals
    for seed, x in ga.items():
        y = gb[seed]
        for key in ("won", "score", "runs", "moves", "actions_sha256"):
            assert x[key] == y[key], (seed, key, x, y)
        assert "failure" not in y


@pytest.mark.parametrize(
    ("obs", "batch", "board"),
    [("compact", True, False), ("float32", False, True)],
)
def test_first_legal_over_the_socket_plays_the_builtin_first(obs: str, batch: bool, board: bool) -> None:
    seen: list[Any] = []

    def fn(o: np.ndarray, m: np.ndarray, *boards: Any) -> Any:
        seen.append((o.dtype, o.shape, boards))
        return first_legal(o, m) if batch else int(m.argmax())

    rep = spider_env.evaluate(
        fn,
        seeds="1-12",
        baselines=["first"],
        obs=obs,
        batch=batch,
        board=board,
        game={"suits": 2, "max_steps": 300},
        per_game=True,
        remote_batch=5,
    )
    assert rep["schema"] == "spider-eval/1" and rep["suite"] is None and rep["suits"] == 2
    assert [p["policy"] for p in rep["policies"]] == ["first", "python (remote)"]
    assert_same_games(rep, "first", "python (remote)", 12)
    assert rep["failures"] == [] and rep["policies"][1]["failures"] == 0
    dtype, shape, boards = seen[0]
    assert dtype == (np.float32 if obs == "float32" else np.uint8)
    with spider_env.SpiderEnv(suits=2, obs=obs) as env:
        assert env.observation_space.shape is not None
        assert shape == ((5, *env.observation_space.shape) if batch else env.observation_space.shape)
    if board:
        b = boards[0]
        assert len(b["face_down"]) == 10 and len(b["face_up"]) == 10 and b["stock_left"] == 50
    else:
        assert boards == ()


def test_first_legal_on_a_dev_suite_matches_deal_for_deal() -> None:
    rep = spider_env.evaluate(first_legal, suite="classic-1suit-dev", baselines=["first", "greedy"], per_game=True)
    assert rep["suite"]["name"] == "classic-1suit-dev" and rep["suite"]["version"] == "1"
    assert rep["deals"] == 200 and rep["seeds"] == "1-200" and rep["max_steps"] == 1000
    assert_same_games(rep, "first", "python (remote)", 200)
    pairs = {(c["a"], c["b"]): c for c in rep["comparisons"]}
    assert pairs[("first", "python (remote)")]["only_a_won"] == 0
    assert pairs[("first", "python (remote)")]["only_b_won"] == 0


def test_illegal_answers_fail_those_games_only() -> None:
    def illegal(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return masks.argmin(axis=1)  # an id whose mask is 0

    rep = spider_env.evaluate(illegal, seeds="1-6", baselines=["greedy"], game={"max_steps": 200})
    remote = rep["policies"][1]
    assert remote["failures"] == 6 and remote["wins"] == 0
    assert rep["policies"][0]["failures"] == 0 and rep["policies"][0]["mean_moves"] > 0
    assert {f["seed"] for f in rep["failures"]} == set(range(1, 7))
    assert all(f["reason"].startswith("illegal action") and f["moves"] == 0 for f in rep["failures"])


def test_ids_past_the_last_are_sent_as_illegal_and_said(capsys: pytest.CaptureFixture[str]) -> None:
    """Ids 0 to 1080 go as they are; 1081 (one past the last) and -1 go as
    1081, which eval counts as that game's illegal action, and stderr names
    the first of them."""
    assert np.frombuffer(_to_actions(np.array([0, 1080]), 2), "<u2").tolist() == [0, 1080]
    assert capsys.readouterr().err == ""
    sent = _to_actions(np.array([5, 1081, -1]), 3)
    assert np.frombuffer(sent, "<u2").tolist() == [5, 1081, 1081]
    err = capsys.readouterr().err
    assert "action 1081 (row 1 of 3)" in err and "2 such actions" in err


def test_a_frame_of_no_bytes_is_refused() -> None:
    """eval never sends an empty frame: one is refused as a protocol error,
    not read as a message."""
    a, b = socket.socketpair()
    with a, b:
        a.sendall((0).to_bytes(4, "big"))
        with pytest.raises(spider_env.SpiderError, match="a frame of 0 bytes"):
            _read_msg(b)


def test_the_policy_may_write_into_its_arrays() -> None:
    """The observations and masks handed to the callable are its own to
    write into (torch warns on read-only arrays; a policy may mask in
    place)."""

    def in_place(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        obs *= 0
        masks[:, 0] |= 0
        return masks.argmax(axis=1)

    rep = spider_env.evaluate(in_place, seeds="1-2", baselines=["first"], game={"max_steps": 50})
    assert rep["failures"] == [] and rep["policies"][1]["mean_moves"] > 0


def test_errors_in_the_policy_are_reported_per_game() -> None:
    def broken(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        raise ValueError("no network loaded")

    rep = spider_env.evaluate(broken, seeds="1-3", baselines=["random"], game={"max_steps": 100})
    assert len(rep["failures"]) == 3
    assert all("ValueError: no network loaded" in f["reason"] for f in rep["failures"])


def test_slow_answers_time_out_and_the_rest_is_played() -> None:
    # The agent answers one request at a time: the second request waits
    # behind the slow first one, so the sleep passes the timeout by less
    # than a timeout (0.5 s of margin either way). The Go tests check the
    # same without depending on time.
    calls = [0]

    def slow_first(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        calls[0] += 1
        if calls[0] == 1:
            time.sleep(1.5)
        return first_legal(obs, masks)

    rep = spider_env.evaluate(
        slow_first,
        seeds="1-4",
        baselines=["first"],
        game={"max_steps": 100},
        remote_timeout=1.0,
        remote_batch=2,
        per_game=True,
    )
    reasons = {f["seed"]: f["reason"] for f in rep["failures"]}
    assert set(reasons) == {1, 2} and all("timed out" in r for r in reasons.values())
    first, remote = games_of(rep, "first"), games_of(rep, "python (remote)")
    for seed in (3, 4):
        assert remote[seed]["actions_sha256"] == first[seed]["actions_sha256"]


def test_a_vanished_agent_fails_its_games_and_eval_goes_on(spider_bin: str) -> None:
    d = tempfile.mkdtemp(prefix="spider-agent-", dir="/tmp")
    path = os.path.join(d, "a.sock")
    ln = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ln.bind(path)
    ln.listen(1)

    def agent() -> None:
        conn, _ = ln.accept()
        with conn:
            hello = _read_msg(conn)
            assert hello is not None
            _send_msg(conn, {"ok": True, "id": hello["id"], "version": 1, "name": "gone"})
            _read_msg(conn)  # the first request, never answered

    t = threading.Thread(target=agent, daemon=True)
    t.start()
    try:
        p = subprocess.run(
            [
                spider_bin,
                "eval",
                "--json",
                "--seeds",
                "1-5",
                "--max-steps",
                "100",
                "--policies",
                f"greedy,remote:unix:{path}",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        ln.close()
        os.unlink(path)
        os.rmdir(d)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["policies"][1]["policy"] == "gone (remote)" and rep["policies"][1]["failures"] == 5
    assert all("agent disconnected" in f["reason"] for f in rep["failures"])
    assert rep["policies"][0]["failures"] == 0


def test_policy_server_refuses_other_hosts_and_taken_paths(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="loopback"):
        spider_env.PolicyServer(first_legal, "10.0.0.1:9000")
    taken = tmp_path / "x.sock"
    taken.write_text("")
    with pytest.raises(FileExistsError):
        spider_env.PolicyServer(first_legal, f"unix:{taken}")
    with pytest.raises(ValueError, match="one of suite and seeds"):
        spider_env.evaluate(first_legal)


def test_stale_sockets_are_replaced_live_ones_refused(tmp_path: Any) -> None:
    path = str(tmp_path / "agent.sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)  # as a killed agent leaves it: the file, nobody listening
    dead.close()
    with spider_env.PolicyServer(first_legal, f"unix:{path}") as live:
        live.start()
        with pytest.raises(FileExistsError, match="live agent"):
            spider_env.PolicyServer(first_legal, f"unix:{path}")
    assert not os.path.exists(path)


def test_names_and_settings_are_checked_first() -> None:
    for bad in ("", "a\nb", "x" * 65, "\udcff"):
        with pytest.raises(ValueError, match="name"):
            spider_env.PolicyServer(first_legal, "127.0.0.1:0", name=bad)
    for t in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="remote_timeout"):
            spider_env.evaluate(first_legal, seeds="1", remote_timeout=t)


def test_long_errors_and_wrong_answers_are_said_per_request() -> None:
    """A 1 MiB error text fails its request's games with the text cut, not
    the whole connection; None and booleans are refused by name."""
    calls = [0]

    def first_fails(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        calls[0] += 1
        if calls[0] == 1:
            raise ValueError("x" * 1_100_000)
        return masks.argmax(axis=1)

    rep = spider_env.evaluate(first_fails, seeds="1-70", baselines="", game={"max_steps": 50}, workers=1)
    fails = rep["failures"]
    assert len(fails) == 64  # the first request's games, not all 70
    assert all(f["reason"].startswith("agent refused: ValueError: xxx") and len(f["reason"]) < 400 for f in fails)
    for answer, what in ((lambda o, m: None, "returned None"), (lambda o, m: m[:, 0] > 0, "dtype bool")):
        rep = spider_env.evaluate(answer, seeds="1-2", baselines=["greedy"], game={"max_steps": 20})
        assert len(rep["failures"]) == 2 and all(what in f["reason"] for f in rep["failures"]), rep["failures"]


_KILLED = """
import sys, time, spider_env
def slow(obs, masks):
    time.sleep(0.05)
    return masks.argmax(axis=1)
spider_env.evaluate(slow, seeds="1-400", baselines=["search"], workers=1)
"""


_CLEANS = """
import spider_env
spider_env.evaluate(lambda obs, masks: masks.argmax(axis=1), seeds="1", baselines=[], game={"max_steps": 5})
"""


def test_killed_python_leaves_no_eval_running(spider_bin: str) -> None:
    """eval stops when the Python process that runs evaluate() is killed,
    and the next evaluate() removes the socket folder it left. Both run in
    a temporary folder of their own: another test run's evaluate() on the
    machine would remove the folder first."""
    parent = tempfile.mkdtemp(prefix="spk", dir="/tmp")  # short: a socket path holds 108 bytes
    env = {**os.environ, "SPIDER_BIN": spider_bin, "TMPDIR": parent}
    p = subprocess.Popen([os.sys.executable, "-c", _KILLED], env=env)

    def evals() -> list[int]:
        out = []
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if b"eval" in args and any(f"spider-agent-{p.pid}-".encode() in a for a in args):
                out.append(int(pid))
        return out

    deadline = time.monotonic() + 30
    while not evals() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert evals(), "eval did not start"
    p.kill()
    p.wait()
    deadline = time.monotonic() + 10
    while evals() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = evals()
    for pid in left:
        os.kill(pid, 9)
    assert not left, "eval kept running after its Python process was killed"
    try:
        stale = [e for e in os.listdir(parent) if e.startswith(f"spider-agent-{p.pid}-")]
        assert stale, "the killed process left no folder (nothing to check)"
        subprocess.run([os.sys.executable, "-c", _CLEANS], env=env, check=True, timeout=60)
        assert not [e for e in os.listdir(parent) if e.startswith(f"spider-agent-{p.pid}-")]
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_cut_error_texts_can_always_be_sent() -> None:
    from spider_env.policy import _cut

    for text in ("short", "é" * 300, "bad " + b"/d/\xff.pt".decode("utf-8", "surrogateescape"), "x" * 1000):
        cut = _cut(text)
        assert len(cut.encode("utf-8")) <= 256  # encodes: no lone surrogate left


def test_stale_socket_probe_does_not_wait_on_a_full_backlog(tmp_path: Any) -> None:
    from spider_env.policy import _stale_socket

    path = str(tmp_path / "busy.sock")
    busy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    busy.bind(path)
    busy.listen(0)
    fill = []
    for _ in range(4):  # fill its backlog: a blocking connect would now wait for ever
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(path)
        except BlockingIOError:
            pass
        fill.append(c)
    start = time.monotonic()
    try:
        assert not _stale_socket(path)  # someone listens: not stale
        assert time.monotonic() - start < 2
    finally:
        for c in fill:
            c.close()
        busy.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_lets_go_of_evals_pipe() -> None:
    """A child forked while evaluate() runs (a policy's multiprocessing)
    closes its copy of the pipe that keeps eval alive."""
    from spider_env import policy

    r, w = os.pipe()
    policy._alive_fds.add(w)
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.fstat(w)
                os._exit(1)  # still open in the child
            except OSError:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        policy._alive_fds.discard(w)
        os.close(r)
        os.close(w)


def test_a_failed_eval_keeps_its_report(monkeypatch: Any) -> None:
    """eval that fails after writing its report (a stop, a record it
    could not save) raises with the report kept."""
    from spider_env import policy

    played = {"policies": [{"policy": "greedy", "games": 3}], "games": []}

    def failed_run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[bytes]:
        assert "--exit-with-stdin" in cmd
        return subprocess.CompletedProcess(cmd, 1, json.dumps(played).encode(), b"spider eval: stopped")

    monkeypatch.setattr(policy.subprocess, "run", failed_run)
    with pytest.raises(spider_env.SpiderError) as e:
        spider_env.evaluate(first_legal, seeds="1-3", baselines=["greedy"])
    assert e.value.code == "eval" and "stopped" in e.value.message and e.value.report == played


def test_any_loopback_address_serves() -> None:
    with spider_env.PolicyServer(first_legal, "127.0.0.2:0") as srv:
        assert srv.address.startswith("127.0.0.2:")


def _dropped(conn: socket.socket) -> bool:
    """Whether the agent closed conn (a reset, where bytes it did not read
    were left)."""
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True


def _hello(conn: socket.socket, max_games: int = 2) -> dict[str, Any]:
    """Say eval's hello on conn and return the agent's reply."""
    _send_msg(
        conn,
        {"op": "hello", "version": 1, "id": 1, "obs_shape": [806], "obs_dtype": "uint8", "max_games": max_games},
    )
    reply = _read_msg(conn)
    assert reply is not None
    return reply


def test_a_flood_of_idle_connections_does_not_stop_the_agent(monkeypatch: Any) -> None:
    """More connections than the agent serves at once are closed, idle
    ones are dropped when they say no hello in time, and running out of
    file descriptors refuses connections for a moment: the agent goes on
    serving. Before, 150 idle connections (ulimit -n 100) ended
    serve_forever with EMFILE, for good."""
    monkeypatch.setattr(spider_env.policy, "_MAX_CONNS", 3)
    monkeypatch.setattr(spider_env.policy, "_HELLO_TIMEOUT", 1.0)
    with spider_env.PolicyServer(first_legal, "127.0.0.1:0") as srv:
        real = srv._sock
        fails = [OSError(24, "Too many open files")]

        class Flaky:  # accept fails once with EMFILE, then works
            def accept(self) -> tuple[socket.socket, Any]:
                if fails:
                    raise fails.pop()
                return real.accept()

        srv._sock = Flaky()  # type: ignore[assignment]
        srv.start()
        host, port = srv.address.rsplit(":", 1)
        idle = [socket.create_connection((host, int(port)), timeout=5) for _ in range(5)]
        try:
            # Two over the cap are closed at once; the three served are
            # dropped after the hello timeout.
            t0 = time.monotonic()
            for c in idle:
                assert _dropped(c)
            assert time.monotonic() - t0 < 4
        finally:
            for c in idle:
                c.close()
        srv._sock = real
        with socket.create_connection((host, int(port)), timeout=5) as c:
            reply = _hello(c)
            assert reply["ok"] and reply["name"] == "python"


def test_frames_are_bounded_by_the_hello() -> None:
    """A frame over 1 MiB before the hello, or over what the hello's games
    can hold after it, drops the connection: a frame of up to 1 GiB was
    read whole (about twice that in memory), on every connection."""
    with spider_env.PolicyServer(first_legal, "127.0.0.1:0") as srv:
        srv.start()
        host, port = srv.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as c:
            c.sendall((2 << 20).to_bytes(4, "big") + b"\x80" * 1000)
            assert _dropped(c)
        with socket.create_connection((host, int(port)), timeout=5) as c:
            assert _hello(c, max_games=2)["ok"]
            bound = spider_env.policy._request_bound({"max_games": 2, "obs_shape": [806]})
            c.sendall((bound + 1).to_bytes(4, "big") + b"\x80" * 1000)
            assert _dropped(c)


def _trickled_out(c: socket.socket) -> float:
    """Send c a byte every 0.25 s, for at most 6 s, until the agent drops
    the connection, which it must; return the seconds that took."""
    t0 = time.monotonic()
    dropped = False
    while time.monotonic() - t0 < 6:
        try:
            c.sendall(b"\x80")
        except (BrokenPipeError, ConnectionResetError):
            dropped = True
            break
        time.sleep(0.25)
    assert dropped or _dropped(c)
    return time.monotonic() - t0


def test_a_hello_sent_a_byte_at_a_time_is_dropped_in_time(monkeypatch: Any) -> None:
    """The hello must come whole within its timeout: a timeout on each
    read let a peer that sends a byte now and then hold its slot for ever.
    A hello that asks for huge frames gets at most 1 GiB ones."""
    monkeypatch.setattr(spider_env.policy, "_HELLO_TIMEOUT", 1.0)
    with spider_env.PolicyServer(first_legal, "127.0.0.1:0") as srv:
        srv.start()
        host, port = srv.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as c:
            c.sendall((100).to_bytes(4, "big"))  # a hello of 100 bytes, which never all come
            assert _trickled_out(c) < 4
    with pytest.raises(spider_env.SpiderError, match="observation bytes"):
        spider_env.policy._request_bound({"max_games": 4096, "obs_shape": [1 << 18], "obs_dtype": "float32"})


def test_a_hello_declares_no_observation_larger_than_there_is(server: Any) -> None:
    """The largest observation a hello may declare is the largest there is
    (float32, four suits, 104 face-up slots): a hello declaring 1 MiB
    observations made frames of 1 GiB possible on every connection."""
    from spider_env import SpiderEnv

    env = SpiderEnv(address=server, suits=4, face_up_slots=104, obs="float32")
    try:
        largest = env.observation_space.shape[0] * 4
    finally:
        env.close()
    assert largest == spider_env.policy._MAX_OBS_BYTES
    hello = {"max_games": 4096, "obs_shape": [largest // 4], "obs_dtype": "float32"}
    assert spider_env.policy._request_bound(hello) <= spider_env.policy._MAX_BUFFERED
    with pytest.raises(spider_env.SpiderError, match="observation bytes"):
        spider_env.policy._request_bound({**hello, "obs_shape": [largest // 4 + 1]})


def _act_frame(n: int) -> dict[str, Any]:
    """An act request for n games of the default observation, every action legal."""
    return {"op": "act", "id": 2, "n": n, "obs": bytes(806 * n), "masks": b"\x01" * (1081 * n)}


def test_frames_held_at_once_are_bounded_over_all_connections(monkeypatch: Any) -> None:
    """The frames all connections hold at once must fit one budget, taken
    at each frame's declared length: before, each of 64 connections could
    hold a frame of its hello's bound (up to 1 GiB) at once. A frame over
    what is left waits for it until its connection's deadline, then drops
    the connection; a waiting frame is served once the bytes it waits for
    are given back."""
    monkeypatch.setattr(spider_env.policy, "_MAX_BUFFERED", 20_000)
    monkeypatch.setattr(spider_env.policy, "_IDLE_TIMEOUT", 1.0)
    release = threading.Event()
    calls = []

    def slow(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        calls.append(len(obs))
        release.wait(10)  # a's request holds its frame until released
        return masks.argmax(axis=1)

    def held_becomes(srv: spider_env.PolicyServer, n: int) -> None:
        deadline = time.monotonic() + 5
        while srv._budget.held != n and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv._budget.held == n

    frame = _act_frame(8)
    size = len(msgpack.packb(frame, use_bin_type=True))  # about 15,200: one fits in 20,000, not two
    with spider_env.PolicyServer(slow, "127.0.0.1:0") as srv:
        srv.start()
        host, port = srv.address.rsplit(":", 1)
        for waits_in_time in (False, True):
            release.clear()
            with socket.create_connection((host, int(port)), timeout=10) as a:
                assert _hello(a, max_games=8)["ok"]
                _send_msg(a, frame)  # held while the policy works on it
                held_becomes(srv, size)
                with socket.create_connection((host, int(port)), timeout=10) as b:
                    assert _hello(b, max_games=8)["ok"]
                    t0 = time.monotonic()
                    _send_msg(b, frame)  # over what is left: it waits
                    if waits_in_time:
                        time.sleep(0.3)
                        release.set()  # a's reply goes, and its bytes with it
                        reply = _read_msg(b)
                        assert reply is not None and reply["ok"] is True and len(reply["actions"]) == 8 * 2
                    else:
                        assert _dropped(b)  # its deadline passed first
                        assert 0.5 < time.monotonic() - t0 < 4
                        release.set()
                    reply = _read_msg(a)
                    assert reply is not None and reply["ok"] is True
            held_becomes(srv, 0)
        assert calls == [8, 8, 8]  # a, a, then b once it fit


def test_an_idle_connection_lets_its_last_frame_go(monkeypatch: Any) -> None:
    """After its reply, a connection waiting for its next request holds
    nothing of its last frame: the decoded message was kept while the
    budget counted its bytes free, so idle connections held a frame each."""
    import tracemalloc

    with spider_env.PolicyServer(first_legal, "127.0.0.1:0") as srv:
        srv.start()
        host, port = srv.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as c:
            assert _hello(c, max_games=4096)["ok"]
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                _send_msg(c, _act_frame(2000))  # about 3.8 MB
                reply = _read_msg(c)
                assert reply is not None and reply["ok"] is True
                del reply
                time.sleep(0.2)  # the server's thread is back waiting
                held = tracemalloc.get_traced_memory()[0] - base
            finally:
                tracemalloc.stop()
            assert held < 1 << 20, f"{held} bytes still held after the reply"


def test_a_request_sent_a_byte_at_a_time_is_dropped_in_time(monkeypatch: Any) -> None:
    """After the hello, each request must come whole within the idle
    timeout of the last reply: a timeout on each read let a peer that
    sends a byte now and then hold its slot for ever (64 such took every
    slot)."""
    monkeypatch.setattr(spider_env.policy, "_IDLE_TIMEOUT", 1.0)
    with spider_env.PolicyServer(first_legal, "127.0.0.1:0") as srv:
        srv.start()
        host, port = srv.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as c:
            assert _hello(c)["ok"]
            c.sendall((100).to_bytes(4, "big"))  # a frame of 100 bytes, which never all come
            assert _trickled_out(c) < 4


def test_close_ends_the_connections_it_serves() -> None:
    """close() ends the connections being served as well as the accepting:
    an idle peer kept its thread and descriptor for the 5-minute idle
    timeout, and a peer that went on asking was served, the policy called,
    for as long as it asked."""
    calls = [0]

    def policy(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return masks.argmax(axis=1)

    before = threading.active_count()
    srv = spider_env.PolicyServer(policy, "127.0.0.1:0").start()
    host, port = srv.address.rsplit(":", 1)
    idle = socket.create_connection((host, int(port)), timeout=10)
    busy = socket.create_connection((host, int(port)), timeout=10)
    try:
        for c in (idle, busy):
            assert _hello(c)["ok"]
        _send_msg(busy, _act_frame(1))
        assert _read_msg(busy)["ok"]
        srv.close()
        assert _dropped(idle)
        _send_msg(busy, _act_frame(1))  # to a closed agent: refused, not played
        assert _dropped(busy)
        assert calls[0] == 1
        deadline = time.monotonic() + 5
        while threading.active_count() > before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert threading.active_count() == before  # the accept loop and both connections' threads
    finally:
        idle.close()
        busy.close()
        srv.close()  # a second close does nothing


def test_act_before_hello_is_refused() -> None:
    """An act before the hello is refused and the connection dropped: the
    callable was called on observations of no width."""
    calls = []

    def policy(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        calls.append(obs.shape)
        return masks.argmax(axis=1)

    with spider_env.PolicyServer(policy, "127.0.0.1:0") as srv:
        srv.start()
        host, port = srv.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as c:
            _send_msg(c, {"op": "act", "id": 2, "n": 1, "obs": b"", "masks": bytes(1081)})
            reply = _read_msg(c)
            assert reply is not None and reply["ok"] is False and reply["error"] == "act before hello"
            assert _dropped(c)
    assert calls == []


def test_evaluate_takes_the_game_as_the_environments_do() -> None:
    """game is a SpiderConfig or a dict of its fields, as for the
    environments: None is the default, an unknown key a TypeError before
    anything runs (it was eval's unknown flag), and obs in both places must
    agree (game's silently won)."""

    def first(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return masks.argmax(axis=1)

    rep = spider_env.evaluate(
        first, seeds="1-2", baselines=["first"], game=spider_env.SpiderConfig(max_steps=30, suits=None)
    )
    assert rep["max_steps"] == 30 and rep["failures"] == []
    rep = spider_env.evaluate(first, seeds="1", baselines=[], game={"max_steps": 20, "obs": "float32", "suits": None})
    assert rep["obs"] == "float32"
    with pytest.raises(TypeError, match="unexpected keyword argument 'sutis': unknown game option"):
        spider_env.evaluate(first, seeds="1", game={"sutis": 2})
    with pytest.raises(ValueError, match="disagree"):
        spider_env.evaluate(first, seeds="1", obs="compact", game={"obs": "float32"})
    with pytest.raises(TypeError, match="must be int"):
        spider_env.evaluate(first, seeds="1", game={"max_steps": "10"})
