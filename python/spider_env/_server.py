"""Start and stop a private ``spider serve`` process.

:class:`SpiderServer` runs the Go server as a subprocess on a Unix socket in
a fresh temporary directory (or on a free loopback TCP port), waits until it
accepts connections, and stops it on :meth:`SpiderServer.close`. A
``weakref.finalize`` stops it too when the object is garbage collected or
the interpreter exits, so a forgotten server never outlives its Python
process; on Linux the server also gets SIGTERM if the Python process dies
without cleaning up (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from ._client import SpiderError

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
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise FileNotFoundError(f"SPIDER_BIN={env!r} is not an executable file")
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


def _pdeathsig_preexec(parent: int) -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGTERM the child when its parent dies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _stop(proc: subprocess.Popen[bytes], tmpdir: str | None, owner: int, stderr_file: IO[bytes]) -> None:
    """Stop the server process and remove its directory (the finalizer)."""
    if os.getpid() != owner:
        # A forked child inherited this object: the server is the parent's.
        return
    try:
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
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


class SpiderServer:
    """A ``spider serve`` subprocess owned by this Python process.

    ``transport`` is ``"unix"`` (a socket in a fresh temporary directory; the
    default where the platform has Unix sockets) or ``"tcp"`` (a free port
    on 127.0.0.1). ``args`` are extra flags for ``spider serve`` (for
    example ``["--max-games", "65536"]``). :attr:`address` is what
    :class:`~spider_env.Client` and the environments take. Use as a context
    manager, or call :meth:`close`; the process is stopped anyway when this
    object is garbage collected or Python exits.
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
        self.binary = binary or find_binary()
        self.transport = transport
        self.tmpdir = tempfile.mkdtemp(prefix="spider-")
        self.address: str = ""
        cmd = [self.binary, "serve"]
        if transport == "unix":
            sock_path = os.path.join(self.tmpdir, "spider.sock")
            if len(sock_path.encode()) > 100:  # sun_path is 108 bytes on Linux
                shutil.rmtree(self.tmpdir, ignore_errors=True)
                self.tmpdir = tempfile.mkdtemp(prefix="spider-", dir="/tmp")
                sock_path = os.path.join(self.tmpdir, "spider.sock")
            cmd += ["--unix", sock_path]
        else:
            sock_path = None
            cmd += ["--addr", "127.0.0.1:0"]
        if workers:
            cmd += ["--workers", str(int(workers))]
        cmd += list(args)
        self._stderr_path = os.path.join(self.tmpdir, "stderr.log")
        # Open for the server's lifetime; the finalizer closes it.
        stderr_file = open(self._stderr_path, "wb")  # noqa: SIM115
        preexec = None
        if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
            # Only from the main thread: PDEATHSIG fires when the thread
            # that started the child exits, not only the process.
            preexec = _pdeathsig_preexec(os.getpid())
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr_file,
                start_new_session=True,  # Ctrl-C in a terminal reaches Python, which stops us
                preexec_fn=preexec,
                close_fds=True,
            )
        except OSError as e:
            stderr_file.close()
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise SpiderError("unavailable", f"cannot start the spider server {self.binary!r}: {e}") from e
        self._finalizer = weakref.finalize(self, _stop, self.proc, self.tmpdir, os.getpid(), stderr_file)
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
            with open(self._stderr_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _wait_ready(self, sock_path: str | None, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            if self.proc.poll() is not None:
                raise SpiderError(
                    "unavailable",
                    f"the spider server {self.binary!r} exited with status {self.proc.returncode} "
                    f"before accepting connections; its stderr:\n{self.stderr_text()}",
                )
            addr = self._try_connect(sock_path)
            if addr is not None:
                return addr
            if time.monotonic() > deadline:
                raise SpiderError(
                    "unavailable",
                    f"the spider server {self.binary!r} did not accept connections within {timeout:g} s; "
                    f"its stderr:\n{self.stderr_text()}",
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
        except OSError:
            return None
        finally:
            s.close()
        return addr

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s) and remove its directory."""
        self._finalizer()

    def __enter__(self) -> SpiderServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self.proc.returncode}"
        return f"SpiderServer(pid={self.pid}, address={self.address!r}, {state})"
