"""The private server: found, started, and never left behind."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import spider_env
from conftest import paused
from spider_env import Client, SpiderEnv, SpiderError, SpiderServer, SpiderVectorEnv, _server


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether no process has pid within timeout (a zombie counts as gone)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):
                    return True
        except (OSError, IndexError):
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_close_stops_the_server():
    env = SpiderEnv()
    srv = env.server
    pid, sock = srv.pid, srv.socket_path
    assert srv.running and sock is not None and os.path.exists(sock)
    assert srv.address == "unix:" + sock
    env.reset(seed=0)
    env.close()
    assert srv.proc.poll() == 0  # stopped cleanly
    assert not os.path.exists(sock)
    assert _gone(pid)
    env.close()


def test_ctrl_c_before_the_finalizer_stops_the_server(monkeypatch):
    """A Ctrl-C landing after the server started but before its finalizer
    existed left it running until Python exited (Popen keeps a running
    child, and with it the pipe the server watches)."""
    started = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_server.subprocess, "Popen", popen)
    monkeypatch.setattr(_server.weakref, "finalize", interrupted)
    with pytest.raises(KeyboardInterrupt):
        SpiderServer()
    assert len(started) == 1 and started[0].poll() is not None  # stopped and reaped
    assert started[0].stdin is None or started[0].stdin.closed


def test_ctrl_c_inside_close_leaves_the_stop_to_the_next(monkeypatch):
    """A Ctrl-C inside close used up the finalizer (it runs once) without
    stopping the server: a second close then did nothing."""
    srv = SpiderServer()
    real_stop = _server._stop

    def interrupted(*args, **kwargs):
        monkeypatch.setattr(_server, "_stop", real_stop)
        raise KeyboardInterrupt

    monkeypatch.setattr(_server, "_stop", interrupted)
    with pytest.raises(KeyboardInterrupt):
        srv.close()
    assert srv.running
    srv.close()
    assert srv.proc.poll() is not None and _gone(srv.pid)
    assert srv.socket_path is not None and not os.path.exists(srv.socket_path)


def test_vector_close_stops_the_server():
    venv = SpiderVectorEnv(4)
    proc = venv.server.proc
    venv.reset(seed=0)
    venv.close()
    assert proc.poll() == 0 and _gone(proc.pid)
    # Closed for good, as AsyncVectorEnv is once closed.
    for call in (lambda: venv.reset(seed=0), lambda: venv.step(np.zeros(4, dtype=np.int64)), lambda: venv.hint(1)):
        with pytest.raises(SpiderError) as e:
            call()
        assert e.value.code == "closed"


def test_garbage_collected_env_stops_its_server():
    env = SpiderEnv()
    env.reset(seed=1)
    proc, sock = env.server.proc, env.server.socket_path
    venv = SpiderVectorEnv(3)
    vproc = venv.server.proc
    del env, venv
    gc.collect()
    assert proc.poll() is not None and vproc.poll() is not None
    assert _gone(proc.pid) and _gone(vproc.pid)
    assert not os.path.exists(sock)


def test_a_given_address_is_not_stopped():
    with SpiderServer() as srv:
        env = SpiderEnv(address=srv)
        assert env.server is None
        env.close()
        assert srv.running
        venv = SpiderVectorEnv(2, address=srv.address)
        venv.close()
        assert srv.running
    assert not srv.running


_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading
    import spider_env
    envs = []
    def make():
        env = spider_env.SpiderEnv()
        env.reset(seed=0)
        envs.append(env)
    if sys.argv[1] == "thread-kill":
        # PR_SET_PDEATHSIG would follow this thread, and could not be used.
        t = threading.Thread(target=make)
        t.start()
        t.join()
    else:
        make()
    child = 0
    if sys.argv[1] == "fork-kill":
        # A forked child, which lives on, must not keep the server alive.
        child = os.fork()
        if child == 0:
            import time
            os.close(1)  # the test reads the parent's output to its end
            os.close(2)
            time.sleep(60)
            os._exit(0)
    print(envs[0].server.pid, envs[0].server.socket_path, child, flush=True)
    if sys.argv[1] == "hard":
        os._exit(0)  # no atexit, no finalizers
    if sys.argv[1] == "all-kill":
        # Ray kills a worker's children so: the server cannot remove its socket.
        os.kill(envs[0].server.pid, signal.SIGKILL)
        envs[0].server.proc.wait()
    if sys.argv[1].endswith("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    # "exit": leave without close(); atexit must stop the server
    """
)


@pytest.mark.parametrize("how", ["exit", "hard", "kill", "thread-kill", "fork-kill"])
def test_no_server_outlives_python(how):
    p = subprocess.run(
        [sys.executable, "-c", _SCRIPT, how], capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )
    pid, sock, child = (int(w) if w.isdigit() else w for w in p.stdout.split())
    try:
        assert p.returncode == (-9 if how.endswith("kill") else 0), p.stderr
        assert _gone(pid, timeout=5), f"server {pid} still running after its Python process ended ({how})"
        # However Python ended, nothing is left: the server removed its socket.
        assert not os.path.exists(sock)
    finally:
        if child:
            os.kill(child, 9)


def test_socket_of_a_killed_server_is_removed_by_the_next(monkeypatch):
    """A server SIGKILLed with its Python (as Ray kills a worker's children)
    leaves its socket; the first SpiderServer of the next process removes it."""
    monkeypatch.setattr(_server, "_swept", set())  # as in a new process
    p = subprocess.run(
        [sys.executable, "-c", _SCRIPT, "all-kill"], capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )
    pid, sock, _ = p.stdout.split()
    assert p.returncode == -9, p.stderr
    assert _gone(int(pid), timeout=5) and os.path.exists(sock)
    with SpiderServer():
        assert not os.path.exists(sock)
    assert os.path.dirname(sock) in _server._swept  # and only once a process


def test_only_stale_server_sockets_are_removed(tmp_path):
    import socket

    dead = subprocess.Popen(["true"])
    dead.wait()
    host = _server._host_tag()

    def name(pid, tag=host, token="ab" * 6):
        return f"spider-{pid}-{tag}-{token}.sock"

    def bound(name, listen):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(tmp_path / name))
        if listen:
            s.listen(1)
            return s
        s.close()  # the file stays, and nobody listens: a killed server's
        return None

    bound(name(dead.pid), listen=False)
    bound(f"spider-{dead.pid}-" + "9a" * 6 + ".sock", listen=False)  # a name from before host tags
    kept = [
        name(dead.pid, token="cd" * 6),  # someone listens: another pid namespace's, say
        name(os.getpid(), token="ef" * 6),  # its Python lives
        name(dead.pid, tag="0" * 8 if host != "0" * 8 else "1" * 8),  # another host's (a shared folder)
        f"spider-{dead.pid}-{host}-" + "ab" * 5 + ".sock",  # not a server's name
        name("\u0661\u0662\u0663"),  # digits, but not ASCII ones
        name(dead.pid, token="12" * 6),  # not a socket
    ]
    live = bound(kept[0], listen=True)
    for k in kept[1:5]:
        bound(k, listen=False)
    (tmp_path / kept[5]).write_text("")
    try:
        _server._remove_stale_server_sockets(str(tmp_path))
        assert sorted(os.listdir(tmp_path)) == sorted(kept)
    finally:
        live.close()
    _server._remove_stale_server_sockets(str(tmp_path / "missing"))  # no folder: nothing to do


def test_tcp_transport():
    with SpiderServer(transport="tcp") as srv:
        assert not srv.address.startswith("unix:")
        host, port = srv.address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        with Client(srv.address) as c:
            c.make(n=2)
            r = c.reset(seed=1)
            assert r["obs"].shape == (2, 806)
        env = SpiderEnv(address=srv.address)
        env.reset(seed=1)
        env.close()


@pytest.mark.parametrize("n", [3, 4, 1024])
@pytest.mark.parametrize("autoreset", ["same-step", "next-step"])
def test_tcp_receive_buffer_holds_every_step_reply(monkeypatch, n, autoreset):
    """Over TCP the client's receive buffer holds its longest step reply
    twice over (the kernel keeps about half for itself) and at least 4 MiB
    (a picture is 921,600 bytes a game), and is never made smaller than the
    kernel's own. It was sized without same-step's final observations and
    below the default: a 3- or 4-game same-step batch's replies outgrew the
    window, and each step waited out TCP's 200 ms persist timer on the
    loopback (0.1 ms on a Unix socket); a picture took seconds."""
    from spider_env import _client

    frames: list[int] = []
    decode = _client.decode_frame

    def record(mv):  # type: ignore[no-untyped-def]
        frames.append(len(mv))
        return decode(mv)

    try:
        with open("/proc/sys/net/core/rmem_max") as f:
            rmem_max = int(f.read())  # what setsockopt grants at most, before doubling
    except OSError:
        pytest.skip("needs Linux's /proc/sys/net/core/rmem_max")
    monkeypatch.setattr(_client, "decode_frame", record)
    with SpiderServer(transport="tcp") as srv, Client(srv.address) as c:
        default = c._sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        c.make(n=n, autoreset=autoreset, mask="bits", max_steps=10)
        r = c.reset(seed=7)
        frames.clear()
        for _ in range(25):  # past the step limit: final observations in same-step
            r = c.step(r["masks"].reshape(n, -1).argmax(axis=1))
        held = c._sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        assert held >= default
        assert held >= 2 * min(max(max(frames), 4 << 20), rmem_max), (held, max(frames))


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="needs SO_PEERCRED, which names the process")
def test_a_server_started_here_is_not_taken_for_another_at_its_path(monkeypatch, spider_bin):
    """The server's socket name is on its command line, which every user
    can read: another process that binds the path first must not be taken
    for the server started here (the env played on the other's, which saw
    every action and wrote every reward, while this one failed to start)."""
    import secrets as _secrets
    import tempfile

    monkeypatch.setattr(_secrets, "token_hex", lambda n: "ab" * n)
    path = os.path.join(tempfile.gettempdir(), f"spider-{os.getpid()}-{_server._host_tag()}-{'ab' * 6}.sock")
    if len(path.encode()) > 80:
        path = os.path.join("/tmp", os.path.basename(path))
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        squatter.bind(path)
        squatter.listen(8)
        with pytest.raises(SpiderError) as e:
            SpiderServer(spider_bin).close()
        assert e.value.code == "unavailable", e.value
    finally:
        squatter.close()
        with contextlib.suppress(FileNotFoundError):  # the server's close removes its path's socket
            os.unlink(path)


@pytest.mark.skipif(not os.path.exists("/bin/sh"), reason="needs a shell")
def test_a_server_started_by_a_wrapper_is_its_own(tmp_path, spider_bin):
    """A SPIDER_BIN that is a wrapper starting the server as its child (not
    by exec) starts a server that is taken for this one's: the process at
    the socket runs under the one started here."""
    wrapper = tmp_path / "spider-wrapper"
    wrapper.write_text(f'#!/bin/sh\n"{spider_bin}" "$@"\n')
    wrapper.chmod(0o755)
    with SpiderServer(str(wrapper)) as srv, Client(srv.address) as c:
        assert c.server_info["version"] == 1


@contextlib.contextmanager
def _listening_as(uid: int, tcp: str = ""):
    """A forked child that listens, as user uid, on a Unix socket in a fresh
    folder of /tmp (or over TCP at the loopback host tcp, on a free port),
    answering nothing: yields its pid and the socket's path (or
    "host:port"). Needs root."""
    import tempfile

    folder = tempfile.mkdtemp(dir="/tmp")
    os.chmod(folder, 0o777)
    path = os.path.join(folder, "peer.sock")
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(uid)
            if tcp:
                s = socket.socket(socket.AF_INET6 if ":" in tcp else socket.AF_INET, socket.SOCK_STREAM)
                s.bind((tcp, 0))
            else:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(path)
                os.chmod(path, 0o777)
            s.listen(1)
            os.write(ready_w, b"%d\n" % (s.getsockname()[1] if tcp else 0))
            time.sleep(10)
        finally:
            os._exit(0)
    try:
        os.close(ready_w)
        port = int(os.read(ready_r, 32))
        yield pid, (f"[{tcp}]:{port}" if ":" in tcp else f"{tcp}:{port}") if tcp else path
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(ready_r)
        shutil.rmtree(folder, ignore_errors=True)


_ROOT = hasattr(os, "fork") and hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.mark.skipif(not _ROOT or not hasattr(socket, "SO_PEERCRED"), reason="needs root and SO_PEERCRED")
def test_peer_ids_reads_a_large_uid_unsigned():
    """A uid is unsigned: one of 2**31 or more read as a signed number was
    another user's, so such a user's own server was refused."""
    from spider_env._client import peer_ids

    with _listening_as(3_000_000_000) as (pid, path), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.connect(path)
        assert peer_ids(c, path) == (pid, 3_000_000_000)


@pytest.mark.skipif(not _ROOT, reason="needs root, to listen as another user")
def test_a_client_refuses_another_users_unix_socket():
    """A Unix socket's server run by another user (one whose socket was made
    reachable, or who took the path first) is refused before the hello: it
    would see every action and write every observation and reward."""
    with _listening_as(65534) as (_, path):
        with pytest.raises(SpiderError) as e:
            Client("unix:" + path, timeout=3).close()
        assert e.value.code == "connection" and "runs as user 65534" in str(e.value), e.value


@pytest.mark.skipif(not _ROOT or not os.path.exists("/proc/net/tcp"), reason="needs root and /proc/net/tcp")
@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_a_client_refuses_another_users_tcp_port(host):
    """Over loopback TCP, a server whose port another user listens at (one
    who took the port first) is refused before the hello, as on a Unix
    socket. The listener never accepts: the check reads who listens."""
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6")
    with _listening_as(65534, tcp=host) as (_, address):
        with pytest.raises(SpiderError) as e:
            Client(address, timeout=3).close()
        assert e.value.code == "connection" and "runs as user 65534" in str(e.value), e.value


def _v6_listener(family: int) -> socket.socket:
    ln = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_INET6:
        ln.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    return ln


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs /proc/net/tcp")
@pytest.mark.parametrize(
    "family,bind,dial",
    [
        (socket.AF_INET, "127.0.0.1", "127.0.0.1"),
        (socket.AF_INET, "0.0.0.0", "127.0.0.1"),
        (socket.AF_INET6, "::1", "::1"),
        (socket.AF_INET6, "::", "127.0.0.1"),  # dual-stack: the IPv4 connection is the IPv6 listener's
    ],
)
def test_tcp_server_uid_finds_this_users_server(family, bind, dial):
    """tcp_server_uid names the owner of the server's side of a loopback
    connection: its listener before the accept, its end of the connection
    after it, even once the listener is closed (a server that closed it to
    hide was let through), and nothing once both are gone."""
    from spider_env._client import tcp_server_uid

    try:
        ln = _v6_listener(family)
        ln.bind((bind, 0))
    except OSError as e:
        pytest.skip(f"no {bind} here: {e}")
    with ln:
        ln.listen(1)
        c = socket.create_connection((dial, ln.getsockname()[1]), timeout=5)
        assert tcp_server_uid(c) == os.getuid()
        end, _ = ln.accept()
    with c:
        with end:
            assert tcp_server_uid(c) == os.getuid()
        deadline = time.monotonic() + 5
        while tcp_server_uid(c) is not None:
            assert time.monotonic() < deadline, "a closed server end still names an owner"
            time.sleep(0.01)


@contextlib.contextmanager
def _as_user_65534(script: str):
    """python3 running script as user 65534, its stdin and stdout piped:
    yields the process and the first line it printed, as an int (a port);
    kills it at the end."""
    p = subprocess.Popen(
        ["/usr/bin/python3", "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        user=65534,
        group=65534,
        extra_groups=[],
    )
    try:
        assert p.stdout is not None
        yield p, int(p.stdout.readline())
    finally:
        p.kill()
        p.wait()


@pytest.mark.skipif(
    not _ROOT or not os.path.exists("/proc/net/tcp") or not os.path.exists("/usr/bin/python3"),
    reason="needs root, /proc/net/tcp and /usr/bin/python3",
)
def test_tcp_server_uid_names_another_users_server():
    """Another user's server is named once it has accepted and closed its
    listener; and this user's [::1]:P is named for a connection to it when
    another user listens at 0.0.0.0:P (an IPv4 listener, which takes no
    connection to ::1, was named and this user's own server refused)."""
    from spider_env._client import tcp_server_uid

    accepts = (
        "import socket, sys\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
        "print(s.getsockname()[1], flush=True)\n"
        "c, _ = s.accept(); s.close(); print('accepted', flush=True); sys.stdin.readline()\n"
    )
    with _as_user_65534(accepts) as (p, port), socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        assert p.stdout is not None and p.stdout.readline() == "accepted\n"
        assert tcp_server_uid(c) == 65534
    if not socket.has_ipv6:
        return
    listens = (
        "import socket, sys\n"
        "s = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen(1)\n"
        "print(s.getsockname()[1], flush=True); sys.stdin.readline()\n"
    )
    with _as_user_65534(listens) as (_, port), socket.socket(socket.AF_INET6) as ln:
        try:
            ln.bind(("::1", port))
        except OSError as e:
            pytest.skip(f"no [::1]:{port} here: {e}")
        ln.listen(1)
        with socket.create_connection(("::1", port), timeout=5) as c:
            assert tcp_server_uid(c) == os.getuid()


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_a_refused_connection_says_why(transport, monkeypatch):
    """A connection over the server's per-user cap is refused with the
    reason: on a Unix socket the hello's send found the connection closed,
    and the client said only "broken pipe" while the reason waited to be
    read (the 33rd env sharing one server, a SyncVectorEnv of 33). The
    hello waits here until the server has surely closed. Over TCP the
    send still succeeds and the reply is read as the hello's: both
    transports must say why."""
    import spider_env._client as client_mod

    check = client_mod._check_peer_user

    def slow_check(*a: object) -> None:
        check(*a)
        time.sleep(0.3)

    with (
        SpiderServer(transport=transport, args=["--max-conns-per-peer", "2"]) as srv,
        Client(srv.address),
        Client(srv.address),
    ):
        monkeypatch.setattr(client_mod, "_check_peer_user", slow_check)
        with pytest.raises(SpiderError) as e:
            Client(srv.address, timeout=5)
        assert e.value.code == "limit" and "--max-conns-per-peer" in str(e.value), e.value


def test_stderr_without_pread(monkeypatch):
    """Where os.pread is missing (Windows), the server's stderr goes to a
    named file, which the TCP transport reads for its port and close
    removes."""
    monkeypatch.delattr(os, "pread")
    with SpiderServer(transport="tcp") as srv:
        path = srv._stderr_path
        assert path is not None and os.path.exists(path)
        assert "listening on tcp" in srv.stderr_text()
        with Client(srv.address) as c:
            assert c.server_info["version"] == 1
    assert not os.path.exists(path)


def test_server_that_cannot_start_says_why():
    with pytest.raises(SpiderError) as e:
        SpiderServer(args=["--max-games", "0"])
    assert e.value.code == "unavailable"
    assert "exited with status" in str(e.value) and "--max-games 0: want at least 1" in str(e.value)


def test_older_server_is_named_as_such(monkeypatch, tmp_path, spider_bin):
    """A binary older than the client, refusing a flag the client passes,
    gets an error that says to rebuild it; one that says nothing says so."""
    old = tmp_path / "old-spider"
    old.write_text("#!/bin/sh\necho 'spider serve: unknown flag: --exit-with-stdin' >&2\nexit 2\n")
    old.chmod(0o755)
    mute = tmp_path / "mute-spider"
    mute.write_text("#!/bin/sh\nexit 3\n")
    mute.chmod(0o755)
    monkeypatch.setenv("SPIDER_BIN", str(old))
    with pytest.raises(SpiderError) as e:
        SpiderServer()
    assert "unknown flag" in str(e.value) and "make build" in str(e.value) and spider_env.__version__ in str(e.value)
    monkeypatch.setenv("SPIDER_BIN", str(mute))
    with pytest.raises(SpiderError) as e:
        SpiderServer()
    assert "status 3" in str(e.value) and "(nothing)" in str(e.value) and "make build" not in str(e.value)
    # A flag of the caller's that the current server does not know is the
    # caller's mistake, not an old server.
    monkeypatch.setenv("SPIDER_BIN", spider_bin)
    with pytest.raises(SpiderError) as e:
        SpiderServer(args=["--max-gamez", "5"])
    assert "unknown flag: --max-gamez" in str(e.value) and "make build" not in str(e.value)


def test_binary_lookup(monkeypatch, tmp_path, spider_bin):
    assert _server.find_binary() == spider_bin
    monkeypatch.setenv("SPIDER_BIN", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError) as e:
        _server.find_binary()
    assert "SPIDER_BIN" in str(e.value) and "does not exist" in str(e.value)
    monkeypatch.setenv("SPIDER_BIN", str(tmp_path))
    with pytest.raises(FileNotFoundError) as e:
        _server.find_binary()
    assert "not a file" in str(e.value)
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\n")
    monkeypatch.setenv("SPIDER_BIN", str(plain))
    with pytest.raises(PermissionError) as e:
        _server.find_binary()
    assert "not executable" in str(e.value)
    monkeypatch.delenv("SPIDER_BIN")
    # The installed package carries its own server (make pytest installs it
    # as pip would), and it comes first after SPIDER_BIN.
    packaged = Path(spider_env.__file__).resolve().parent / "bin" / "spider"
    assert packaged.is_file() and _server.find_binary() == str(packaged)
    monkeypatch.setattr(_server, "_packaged_bin", lambda: None)
    monkeypatch.setattr(_server, "_repo_bin", lambda start: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError) as e:
        SpiderEnv()
    assert "make build" in str(e.value) and "SPIDER_BIN" in str(e.value)
    # Without a packaged one, the repository's bin/spider, found by walking
    # up from the package (here a repository made for the test).
    monkeypatch.undo()
    repo = tmp_path / "repo"
    (repo / "bin").mkdir(parents=True)
    (repo / "go.mod").write_text(_server._GO_MODULE + "\n\ngo 1.26\n")
    start = repo / ".venv" / "lib" / "spider_env"
    start.mkdir(parents=True)
    assert _server._repo_bin(start) is None  # no bin/spider yet: make build has not run
    (repo / "bin" / "spider").write_bytes(b"")
    (repo / "bin" / "spider").chmod(0o755)
    found = _server._repo_bin(start)
    assert found == repo / "bin" / "spider"
    (tmp_path / "go.mod").write_text("module example.com/other\n")
    assert _server._repo_bin(tmp_path / "x") is None  # another module's folder is not ours
    monkeypatch.delenv("SPIDER_BIN")
    monkeypatch.setattr(_server, "_packaged_bin", lambda: None)
    monkeypatch.setattr(_server, "_repo_bin", lambda _start: found)
    assert _server.find_binary() == str(found)


def test_broken_connection_is_an_error():
    srv = SpiderServer()
    env = SpiderEnv(address=srv)
    obs, info = env.reset(seed=0)
    srv.close()
    with pytest.raises(SpiderError) as e:
        env.step(int(np.argmax(info["action_mask"])))
    assert e.value.code == "connection"
    assert env.client.closed  # a broken stream is not used again
    cause = e.value.message
    with pytest.raises(SpiderError) as e:
        env.step(0)
    # Later calls still say what broke it.
    assert e.value.code == "closed" and e.value.message.endswith("the connection was closed: " + cause)
    env.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_leaves_the_parent_alone():
    """A child that inherits an env and closes it must neither stop the
    parent's server nor close the parent's connection."""
    env = SpiderEnv()
    obs, info = env.reset(seed=0)
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            env.close()
            gc.collect()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    try:
        assert env.server.running
        obs, r, term, trunc, info = env.step(int(np.argmax(info["action_mask"])))
        assert info["moves"] == 1
    finally:
        env.close()
    assert not env.server.running


def test_a_stalled_server_times_out(spider_bin):
    """A server that stops answering (SIGSTOP) makes a request fail with a
    timeout error after the env's timeout, instead of hanging."""
    srv = SpiderServer(spider_bin)
    # Not 1 s: closing sets its own 1 s timeout on the socket, which the
    # message must not report instead.
    env = SpiderEnv(address=srv, timeout=1.5)
    try:
        obs, info = env.reset(seed=0)
        with paused(srv.proc.pid):
            start = time.monotonic()
            with pytest.raises(SpiderError) as e:
                env.step(int(np.argmax(info["action_mask"])))
        assert e.value.code == "timeout" and "did not answer 'step' within 1.5 s" in str(e.value)
        assert 1.4 < time.monotonic() - start < 5
        assert env.client.closed  # its stream is not trusted again
    finally:
        env.close()
        srv.close()
    assert SpiderEnv.__init__.__kwdefaults__["timeout"] == 60.0  # a bound by default


def test_workers_become_the_servers_default():
    """SpiderServer(workers=5) starts the server with --workers 5: a batch
    made without its own count steps on 5 workers (at most one a game),
    not on the server's GOMAXPROCS default."""
    with SpiderServer(workers=5) as srv, Client(srv.address) as c:
        assert c.make(n=16)["workers"] == 5
        assert c.make(n=3)["workers"] == 3
        assert c.make(n=16, workers=2)["workers"] == 2


def test_server_that_never_listens_is_stopped(tmp_path):
    """A server that starts but does not listen within startup_timeout is
    stopped before the error is raised: not left running for as long as
    something holds the error (a notebook keeps the last one, and its
    traceback keeps the half-made SpiderServer)."""
    pidfile = tmp_path / "pid"
    mute = tmp_path / "deaf-spider"
    mute.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 60\n")
    mute.chmod(0o755)
    with pytest.raises(SpiderError) as e:
        SpiderServer(str(mute), startup_timeout=1.0)
    assert e.value.code == "unavailable" and "did not accept connections within 1 s" in str(e.value)
    pid = int(pidfile.read_text())
    assert _gone(pid), f"the server that never listened (pid {pid}) still runs while its error is held"


def test_stale_sockets_of_other_users_are_kept(tmp_path, monkeypatch):
    """The sweep removes this user's stale server sockets only: a stale
    socket another user owns (here: this user's, with getuid made to say
    another) is theirs to remove, even where this user could."""
    import socket

    dead = subprocess.Popen(["true"])
    dead.wait()
    name = f"spider-{dead.pid}-{_server._host_tag()}-{'ab' * 6}.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(tmp_path / name))
    s.close()  # the file stays, and nobody listens: a killed server's
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)
    _server._remove_stale_server_sockets(str(tmp_path))
    assert os.listdir(tmp_path) == [name]
    monkeypatch.setattr(os, "getuid", lambda: uid)
    _server._remove_stale_server_sockets(str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_long_temporary_folder_puts_the_socket_in_tmp(tmp_path, monkeypatch):
    """A temporary folder too deep for a Unix socket's path (at most 103
    or 107 bytes) does not stop the server: its socket goes to /tmp."""
    import tempfile

    deep = tmp_path / ("d" * max(1, 120 - len(str(tmp_path).encode())))  # 120 bytes, with the socket's name 160
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert len(str(deep).encode()) >= 120
    with SpiderServer(transport="unix") as srv, Client(srv.address) as c:
        assert srv.socket_path is not None and os.path.dirname(srv.socket_path) == "/tmp"
        c.make(n=1)
    assert not os.path.exists(srv.socket_path)


def test_a_server_says_how_to_share_it_instead_of_pickling(spider_bin):
    """A SpiderServer owns its process, so it is not pickled (a spawn
    worker's factory that captured it would be a second owner): the error
    says to pass its address instead, and that address works. Within the
    process a copy is the server itself, as a copy of a Logger is: what
    gymnasium copies (an env's spec, check_env's remake) shares it."""
    import copy
    import pickle

    srv = SpiderServer(spider_bin)
    try:
        with pytest.raises(TypeError, match=r"cannot be pickled.*address=server\.address"):
            pickle.dumps(srv)
        assert copy.deepcopy(srv) is srv and copy.copy(srv) is srv
        assert copy.deepcopy({"address": srv})["address"] is srv
        env = SpiderEnv(address=pickle.loads(pickle.dumps(srv.address)))
        try:
            _, info = env.reset(seed=1)
            assert info["action_mask"].any()
        finally:
            env.close()
        assert srv.running
    finally:
        srv.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_report_its_parents_server_exited(spider_bin):
    """A forked child cannot wait on its parent's server: asking Popen
    there recorded a made-up exit status 0, and repr said "exited 0" of a
    server that runs. The child says whose it is, and the parent's server
    runs on."""
    srv = SpiderServer(spider_bin)
    try:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            try:
                os.write(w, f"{srv.running}|{srv!r}".encode())
            finally:
                os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        running, text = os.read(r, 1000).decode().split("|", 1)
        os.close(r)
        assert running == "False"
        assert f"owned by process {os.getpid()}" in text and "exited" not in text
        assert srv.running and "running" in repr(srv)
    finally:
        srv.close()
    assert not srv.running and "exited" in repr(srv)
