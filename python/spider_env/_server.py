"""Start and stop a private ``spider serve`` process.

:class:`SpiderServer` runs the Go server as a subprocess on a Unix socket
with a random name in the temporary directory (or on a free loopback TCP
port), waits until it accepts connections, and stops it on
:meth:`SpiderServer.close`. A ``weakref.finalize`` stops it too when the
object is garbage collected or the interpreter exits; and the server reads
a pipe from this process on its stdin (``spider serve --exit-with-stdin``),
so when Python dies any other way (SIGKILL, from any thread) the pipe
closes and the server stops and removes its socket. Its stderr goes to a
file that has no name, so nothing is left behind either way, unless the
server itself is killed (as Ray kills a worker's children): the first
SpiderServer a process starts then removes such sockets of this host's
dead processes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from ._client import SpiderError, check_seconds, peer_ids
from ._version import __version__

__all__ = ["SpiderServer", "find_binary"]

_GO_MODULE = "module github.com/spiderenv/spider"


def _repo_bin(start: Path) -> Path | None:
    """bin/spider in the first directory above start holding the repo's go.mod."""
    for d in [start, *start.parents]:
        gomod = d / "go.mod"
        try:
            if gomod.is_file() and _GO_MODULE in gomod.read_text(errors="replace"):
                b = d / "bin" / "spider"
                return b if b.is_file() else None
        except OSError:
            continue
    return None


def _packaged_bin() -> Path | None:
    """The server binary the wheel built into this package, if it is there."""
    b = Path(__file__).resolve().parent / "bin" / "spider"
    return b if b.is_file() and os.access(b, os.X_OK) else None


def find_binary() -> str:
    """The spider binary to run.

    In order: the SPIDER_BIN environment variable (an override); the binary
    built into the installed package (``spider_env/bin/spider``, which the
    wheel carries, so no Go and no repository are needed); bin/spider of
    the repo found by walking up from this package's file (an editable
    install), then from the current directory; ``spider`` on PATH.
    """
    env = os.environ.get("SPIDER_BIN")
    if env:
        if not os.path.exists(env):
            raise FileNotFoundError(f"SPIDER_BIN={env!r} does not exist")
        if not os.path.isfile(env):
            raise FileNotFoundError(f"SPIDER_BIN={env!r} is not a file (a directory?)")
        if not os.access(env, os.X_OK):
            raise PermissionError(f"SPIDER_BIN={env!r} is not executable (chmod +x it)")
        return env
    packaged = _packaged_bin()
    if packaged is not None:
        return str(packaged)
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        b = _repo_bin(start)
        if b is not None and os.access(b, os.X_OK):
            return str(b)
    which = shutil.which("spider")
    if which:
        return which
    raise FileNotFoundError(
        "cannot find the spider server binary: run `make build` in the spider repository "
        "(it writes bin/spider), or set SPIDER_BIN to the binary's path, or put `spider` on PATH"
    )


# The servers this process started: a forked child closes its copies of
# their stdin pipes, so that the parent's death still ends them (the child
# cannot use the parent's connections anyway).
_servers: weakref.WeakSet[SpiderServer] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for srv in list(_servers):
        with contextlib.suppress(Exception):
            if srv.proc.stdin is not None:
                srv.proc.stdin.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _stop(
    proc: subprocess.Popen[bytes], sock_path: str | None, owner: int, stderr_file: IO[bytes], stderr_path: str | None
) -> None:
    """Stop the server process and remove its socket (the finalizer)."""
    if os.getpid() != owner:
        # A forked child inherited this object: the server is the parent's.
        return
    try:
        if proc.stdin is not None:
            proc.stdin.close()  # what stops it when this process dies
        if proc.poll() is None:
            try:
                proc.terminate()
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        try:
            stderr_file.close()
        except Exception:
            pass
        for path in (sock_path, stderr_path):
            if not path:
                continue
            # The server removes its socket as it stops; not if it had to be killed.
            with contextlib.suppress(OSError):
                os.remove(path)


def _stale_socket(path: str) -> bool:
    """Whether path is a Unix socket nobody listens on (a killed process's)."""
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return False
    except OSError:
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)  # a live listener with a full backlog says EAGAIN, not wait
    try:
        probe.connect(path)
    except OSError as e:
        return e.errno == errno.ECONNREFUSED
    finally:
        probe.close()
    return False


def _descends(pid: int, ancestor: int) -> bool:
    """Whether process pid is ancestor or runs under it (a SPIDER_BIN that
    is a wrapper may start the server as its child), by /proc's parent
    links; where there is no /proc, only pid itself."""
    for _ in range(32):
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            pid = int(stat[stat.rindex(b")") + 2 :].split()[1])  # after the name, which may hold ")"
        except (OSError, ValueError, IndexError):
            return False
        if pid <= 1:
            return False
    return False


def _host_tag() -> str:
    """8 hex digits naming this host in socket and folder names: a pid means
    nothing in a temporary folder that other hosts share (NFS), where a
    live server's socket also refuses a connection from here."""
    return hashlib.sha256(socket.gethostname().encode(errors="replace")).hexdigest()[:8]


# The host tag is optional: names before it had none.
_SERVER_SOCKET = re.compile(r"spider-([0-9]+)-(?:([0-9a-f]{8})-)?[0-9a-f]{12}\.sock")

# The folders swept already: once a process is enough, and a temporary
# folder can be large.
_swept: set[str] = set()


def _remove_stale_server_sockets(parent: str) -> None:
    """Remove the sockets of servers killed together with the Python process
    that started them (their names carry its pid and host), this user's
    only: a server stopped any other way removes its own, but a SIGKILL
    (Ray kills a worker's children so) leaves it."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    host = _host_tag()
    for entry in names:
        m = _SERVER_SOCKET.fullmatch(entry)
        if not m or m.group(2) not in (None, host):
            continue
        path = os.path.join(parent, entry)
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            # A pid of another pid namespace sharing the folder may look
            # dead: a socket someone listens on is kept.
            if _stale_socket(path):
                with contextlib.suppress(OSError):
                    os.remove(path)
        except (OSError, OverflowError, AttributeError):
            continue


class SpiderServer:
    """A ``spider serve`` subprocess owned by this Python process.

    ``transport`` is ``"unix"`` (a socket with a random name in the
    temporary directory, which the server makes owner-only; the default
    where the platform has Unix sockets) or ``"tcp"`` (a free port on
    127.0.0.1). ``args`` are extra flags for ``spider serve`` (for example
    ``["--max-games", "65536"]``). :attr:`address` is what
    :class:`~spider_env.Client` and the environments take. Use as a context
    manager, or call :meth:`close`; the process is stopped anyway when this
    object is garbage collected or Python exits, and stops itself when
    Python is killed. Its connections are not closed for being idle (a
    paused notebook, an evaluation env between evaluations) unless
    ``args`` sets ``--idle-timeout``. A copy (``copy.copy``,
    ``copy.deepcopy``: what gymnasium does to a spec that names it as an
    env's address) is the same server; pickling it raises TypeError, since
    another process cannot own it: pass :attr:`address` there instead.
    """

    def __init__(
        self,
        binary: str | None = None,
        *,
        transport: str | None = None,
        workers: int = 0,
        args: Sequence[str] = (),
        startup_timeout: float = 10.0,
    ):
        if transport is None:
            transport = "unix" if hasattr(socket, "AF_UNIX") else "tcp"
        if transport not in ("unix", "tcp"):
            raise ValueError(f"transport {transport!r}: want 'unix' or 'tcp'")
        check_seconds("startup_timeout", startup_timeout, optional=False)  # it bounds the start
        self.binary = binary or find_binary()
        self.transport = transport
        self.address: str = ""
        self.socket_path: str | None = None
        """The Unix socket's path (None on TCP); removed when the server stops."""
        # Idle connections stay: its clients are this process's envs.
        cmd = [self.binary, "serve", "--exit-with-stdin", "--idle-timeout", "8760h"]
        if transport == "unix":
            name = f"spider-{os.getpid()}-{_host_tag()}-{secrets.token_hex(6)}.sock"
            sock_path = os.path.join(tempfile.gettempdir(), name)
            if len(sock_path.encode()) > 80:  # a socket's path has at most 103 bytes (macOS; 107 on Linux)
                sock_path = os.path.join("/tmp", name)
            parent = os.path.dirname(sock_path)
            if parent not in _swept:
                _swept.add(parent)
                _remove_stale_server_sockets(parent)
            self.socket_path = sock_path
            cmd += ["--unix", sock_path]
        else:
            sock_path = None
            cmd += ["--addr", "127.0.0.1:0"]
        if workers:
            cmd += ["--workers", str(int(workers))]
        # The flags this client passes, which an older server may not know.
        self._own_flags = [a for a in cmd[2:] if a.startswith("--")]
        cmd += list(args)
        # A file without a name, open for the server's lifetime (the
        # finalizer closes it): nothing to remove, however Python ends. It
        # is read with pread, since its offset is the server's too; where
        # there is none (Windows), a named file is read by name and removed
        # on stop, though not if Python is killed.
        self._stderr_path: str | None = None
        stderr_file: IO[bytes]
        if hasattr(os, "pread"):
            stderr_file = tempfile.TemporaryFile(prefix="spider-")  # noqa: SIM115
        else:
            fd, self._stderr_path = tempfile.mkstemp(prefix="spider-", suffix=".log")
            stderr_file = os.fdopen(fd, "wb")
        self._stderr = stderr_file
        self._owner = os.getpid()
        proc: subprocess.Popen[bytes] | None = None
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,  # never written: its end closing stops the server
                stdout=subprocess.DEVNULL,
                stderr=stderr_file,
                start_new_session=True,  # Ctrl-C in a terminal reaches Python, which stops us
                close_fds=True,
            )
            self.proc = proc
            self._finalizer = weakref.finalize(
                self, _stop, proc, sock_path, self._owner, stderr_file, self._stderr_path
            )
        except BaseException as e:
            # A Ctrl-C after the server started but before its finalizer
            # existed left it running until Python exited: Popen keeps a
            # running child, and with it the pipe the server watches.
            if proc is not None:
                _stop(proc, sock_path, self._owner, stderr_file, self._stderr_path)
            else:
                stderr_file.close()
                if self._stderr_path:
                    with contextlib.suppress(OSError):
                        os.remove(self._stderr_path)
            if isinstance(e, OSError) and proc is None:
                raise SpiderError("unavailable", f"cannot start the spider server {self.binary!r}: {e}") from e
            raise
        _servers.add(self)
        try:
            self.address = self._wait_ready(sock_path, startup_timeout)
        except BaseException:
            self.close()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_text(self) -> str:
        """What the server wrote to its stderr so far."""
        try:
            if self._stderr_path is not None:
                with open(self._stderr_path, "rb") as f:
                    return f.read().decode(errors="replace")
            fd = self._stderr.fileno()
            # pread: the file's offset is the server's too, and must not move.
            return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")
        except (OSError, ValueError):  # closed
            return ""

    def _wait_ready(self, sock_path: str | None, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            if self.proc.poll() is not None:
                said = self.stderr_text()
                hint = ""
                if any(f"unknown flag: {f}" in said for f in self._own_flags) or "unknown command" in said:
                    # A binary built before a flag this client passes (not
                    # one of the caller's args): a stale bin/spider after a
                    # pull, most likely.
                    hint = (
                        f"\n(the server may be older than this client, spider-env {__version__}: "
                        "rebuild it with `make build`, or point SPIDER_BIN at a current one)"
                    )
                raise SpiderError(
                    "unavailable",
                    f"the spider server {self.binary!r} exited with status {self.proc.returncode} "
                    f"before accepting connections; its stderr:\n{said or '(nothing)'}{hint}",
                )
            addr = self._try_connect(sock_path)
            if addr is not None:
                return addr
            if time.monotonic() > deadline:
                raise SpiderError(
                    "unavailable",
                    f"the spider server {self.binary!r} did not accept connections within {timeout:g} s; "
                    f"its stderr:\n{self.stderr_text() or '(nothing)'}",
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _try_connect(self, sock_path: str | None) -> str | None:
        target: str | tuple[str, int]
        if sock_path is not None:
            if not os.path.exists(sock_path):
                return None
            family, target, addr = socket.AF_UNIX, sock_path, "unix:" + sock_path
        else:
            m = re.search(r"listening on tcp (\S+):(\d+)", self.stderr_text())
            if not m:
                return None
            host, port = m.group(1).strip("[]"), int(m.group(2))
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            target, addr = (host, port), f"{m.group(1)}:{port}"
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            s.settimeout(1.0)
            s.connect(target)
            if sock_path is not None:
                # The socket's name is on the server's command line, which
                # every user can read: another could bind it first, and
                # this server would fail to start while the env played on
                # theirs. Only the process started here will do.
                pid, uid = peer_ids(s, sock_path)
                if (pid is not None and not _descends(pid, self.proc.pid)) or (
                    hasattr(os, "getuid") and uid != os.getuid()
                ):
                    raise SpiderError(
                        "unavailable",
                        f"another process (pid {pid}, user {uid}) listens at {sock_path}, where the spider "
                        f"server this started (pid {self.proc.pid}) was to listen: refused",
                    )
        except OSError:
            return None
        finally:
            s.close()
        return addr

    @property
    def running(self) -> bool:
        """Whether this process's server runs: False in a forked child,
        which does not own its parent's server (and cannot wait on it:
        asking would record a made-up exit) and starts its own."""
        if os.getpid() != self._owner:
            return False
        return self.proc.poll() is None

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s) and remove its socket."""
        # The stop runs first and the finalizer is let go only once it is
        # done: a Ctrl-C inside it leaves the finalizer to stop the server
        # at the next close, when the object goes, or at exit.
        _stop(self.proc, self.socket_path, self._owner, self._stderr, self._stderr_path)
        self._finalizer.detach()

    def __enter__(self) -> SpiderServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __copy__(self) -> SpiderServer:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> SpiderServer:
        # A copy in this process is the server itself, as a Logger's is:
        # gymnasium deep-copies an env's spec (its checker's spec, make
        # from a spec, check_env), whose kwargs hold the server given as
        # the address, and the copy means the same server.
        return self

    def __getstate__(self) -> NoReturn:
        # Pickled, it would be a second owner of one process; the default
        # error named a file object ("cannot pickle '_io.BufferedRandom'").
        raise TypeError(
            "a SpiderServer cannot be pickled: it owns its server process; to share one "
            "server with other processes (a spawn or forkserver worker, SB3's SubprocVecEnv), pass "
            "its address string, address=server.address, instead of the object"
        )

    def __repr__(self) -> str:
        if os.getpid() != self._owner:
            state = f"owned by process {self._owner}"
        else:
            state = "running" if self.running else f"exited {self.proc.returncode}"
        return f"SpiderServer(pid={self.pid}, address={self.address!r}, {state})"
