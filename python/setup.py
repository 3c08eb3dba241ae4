"""Builds the spider server into the package, so a wheel runs without Go.

pyproject.toml holds the metadata; this file only adds the build step: the
Go binary (``go build ./cmd/spider`` in the repository above this folder)
goes into ``spider_env/bin/spider``, and the wheel is tagged for this
platform since it carries a native program. Set SPIDER_BIN at build time
to package an existing binary instead of building one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70
    from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent


class BuildWithServer(build_py):
    def run(self) -> None:
        super().run()
        out = Path(self.build_lib).resolve() / "spider_env" / "bin" / "spider"
        out.parent.mkdir(parents=True, exist_ok=True)
        given = os.environ.get("SPIDER_BIN")
        if given:
            shutil.copy2(given, out)
            return
        root = HERE.parent
        go = shutil.which("go")
        if not (root / "go.mod").is_file() or go is None:
            raise SystemExit(
                "building spider-env needs the spider repository (go.mod above python/) and Go, "
                "or SPIDER_BIN naming a built server binary to package. An sdist carries no Go "
                "sources: build the wheel from the repository (pip wheel ./python, or "
                "python -m build --wheel python), or set SPIDER_BIN"
            )
        # Pure Go (no cgo): the binary runs on any Linux of this
        # architecture, whatever C libraries it has.
        env = {**os.environ, "CGO_ENABLED": "0"}
        version = _version()
        ldflags = f"-s -w -X github.com/spiderenv/spider/internal/cli.Version=v{version}"
        cmd = [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(out), "./cmd/spider"]
        # -buildvcs=auto names the commit in `spider version` and in eval's
        # reports, as `make build` does, even where GOFLAGS turns it off;
        # where git cannot read the checkout (another user's, say) the build
        # goes on without the commit, as GOFLAGS=-buildvcs=false would.
        stamped = subprocess.run(
            [*cmd[:2], "-buildvcs=auto", *cmd[2:]], cwd=root, env=env, capture_output=True, text=True
        )
        if stamped.returncode != 0:
            if "VCS status" not in stamped.stderr:
                sys.stderr.write(stamped.stderr)
                raise subprocess.CalledProcessError(stamped.returncode, cmd, stamped.stdout, stamped.stderr)
            subprocess.run([*cmd[:2], "-buildvcs=false", *cmd[2:]], cwd=root, env=env, check=True)


def _version() -> str:
    """The package's version, from its one place (_version.py)."""
    scope: dict[str, str] = {}
    exec((HERE / "spider_env" / "_version.py").read_text(), scope)
    return scope["__version__"]


class PlatformWheel(bdist_wheel):  # type: ignore[misc]
    """A wheel for this OS and architecture (it holds a native binary) that
    any Python 3 can use (no extension modules)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        _, _, plat = super().get_tag()
        return "py3", "none", plat


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildWithServer, "bdist_wheel": PlatformWheel}, distclass=BinaryDistribution)
