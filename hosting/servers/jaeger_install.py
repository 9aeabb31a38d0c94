"""``python -m hosting.servers.jaeger_install``: build the Jaeger v2 binary into the cache.

Jaeger v2 (an OpenTelemetry Collector distribution that receives OTLP natively) is built from its
Go module, fetched through the Go module proxy, at the pinned :data:`VERSION` (the module's tags
are ``v1.x`` for the ``v2`` binary line). Everything lands under ``settings.build_cache``
(``~/.cache/detector-mesh``, per user like pip's and Maven's caches; ``MESH_BUILD_CACHE`` moves
it): the binary in ``jaeger/<version>/jaeger``, Go's module and build caches in ``go/``. Nothing in
it depends on the checkout, so a second clone finds the binary (the build took ~8 min of the
first clone's `make images` and `make test`), and a rebuild after a version bump reuses what it
can. Skipped when the binary is there already.

Why not ``go install github.com/jaegertracing/jaeger/cmd/jaeger@<version>``: Jaeger's ``go.mod``
has ``replace`` directives, which ``go install pkg@version`` refuses. So the module is downloaded
(``go mod download``) and built from its folder in the module cache, where it is the main module
and its ``replace`` directives apply: the same sources, the same dependency versions. The binary
is built to a temporary name and renamed into place, so an interrupted build leaves nothing that
looks installed, and the whole build holds a lock file beside it, so a second build started
meanwhile (``make demo`` beside ``make test``) waits for the first and then finds the binary.

``--idle`` builds at the idle CPU priority (Linux's ``SCHED_IDLE``, inherited by Go's compiler
processes): ``make test`` starts the build that way beside the tests that need no Jaeger, so the
~8 minutes it takes on two cores come out of the CPU the tests leave unused instead of before
the first test (``testkit.jaeger_build``).

The binary does not embed the Jaeger UI's web assets: Jaeger's release process builds them with
npm, the Go module carries only a placeholder page (v1.76.0, and v1.40.0 and v1.17.0 alike), and
the npm name ``jaeger-ui`` has no published version. So nothing is installed for the UI: the local
Jaeger serves the mesh's own trace viewer from ``infra/jaeger/ui`` over its HTTP API (see
:mod:`hosting.servers.jaeger`, which also takes a jaeger-ui build put into ``.cache/jaeger/ui``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from shared.errors import MeshError
from shared.settings import Settings

__all__ = ["MODULE", "VERSION", "JaegerInstallError", "binary_path", "install", "installed"]

#: Go module of Jaeger; its ``cmd/jaeger`` package is the v2 binary.
MODULE = "github.com/jaegertracing/jaeger"
#: Pinned module version: the newest tag (Jaeger v2 line) that builds with Go 1.26.
VERSION = "v1.76.0"
#: Where Go lives when it was installed from go.dev's tarball but is not on PATH.
GO_FALLBACK = Path("/usr/local/go/bin/go")
GO_MISSING = (
    "Go is needed to build Jaeger and was not found: install Go 1.24 or newer "
    "(https://go.dev/doc/install, e.g. unpack the tarball to /usr/local/go) and put it on PATH"
)
_UNREACHABLE = (
    "dial tcp",
    "no such host",
    "i/o timeout",
    "connection refused",
    "proxyconnect",
    "TLS handshake",
    "network is unreachable",
)

Runner = Callable[
    [Sequence[str], Mapping[str, str], Path | None], "subprocess.CompletedProcess[str]"
]


class JaegerInstallError(MeshError):
    """Jaeger could not be built: no Go, the module proxy unreachable, or the build failed."""


def binary_path(settings: Settings, version: str = VERSION) -> Path:
    """Where the Jaeger binary of ``version`` is (or will be) installed."""
    return settings.build_cache / "jaeger" / version / "jaeger"


def installed(settings: Settings, version: str = VERSION) -> Path | None:
    """The Jaeger binary of ``version`` if it was built, else None."""
    path = binary_path(settings, version)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def go_env(settings: Settings, version: str = VERSION) -> dict[str, str]:
    """The environment for Go: every path of Go's under ``settings.build_cache``, the local
    toolchain only (no toolchain download), a module cache we can delete (``-modcacherw``), no
    cgo."""
    go_root = settings.build_cache / "go"
    return {
        **os.environ,
        "GOBIN": str(binary_path(settings, version).parent),
        "GOPATH": str(go_root / "path"),
        "GOCACHE": str(go_root / "build"),
        "GOMODCACHE": str(go_root / "mod"),
        "GOFLAGS": "-modcacherw",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }


def find_go(which: Callable[[str], str | None] = shutil.which) -> str | None:
    found = which("go")
    if found is not None:
        return found
    return str(GO_FALLBACK) if GO_FALLBACK.is_file() else None


def install(
    settings: Settings,
    version: str = VERSION,
    *,
    run: Runner | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> Path:
    """Build Jaeger ``version`` unless it is installed; its binary. Raises JaegerInstallError."""
    existing = installed(settings, version)
    if existing is not None:
        return existing
    go = find_go(which)
    if go is None:
        raise JaegerInstallError(GO_MISSING)
    target = binary_path(settings, version)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(target.parent):
        built_meanwhile = installed(settings, version)
        if built_meanwhile is not None:
            return built_meanwhile
        return _build(go, settings, version, target, run or _run)


@contextlib.contextmanager
def _build_lock(folder: Path) -> Iterator[None]:
    """Held for a whole build: one build of a version at a time, whoever started it."""
    with (folder / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build(go: str, settings: Settings, version: str, target: Path, run: Runner) -> Path:
    env = go_env(settings, version)

    download = run([go, "mod", "download", "-json", f"{MODULE}@{version}"], env, None)
    if download.returncode != 0:
        raise JaegerInstallError(_explain(f"download {MODULE}@{version}", download, env))
    try:
        source = Path(json.loads(download.stdout)["Dir"])
    except (ValueError, KeyError, TypeError):
        raise JaegerInstallError(
            f"`go mod download` gave no module folder for {MODULE}@{version}: "
            f"{_tail(download.stdout)}"
        ) from None

    partial = target.with_name(f".{target.name}.partial")
    ldflags = f"-s -w -X {MODULE}/internal/version.latestVersion={version}"
    build = run(
        [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(partial), "./cmd/jaeger"],
        env,
        source,
    )
    if build.returncode != 0:
        partial.unlink(missing_ok=True)
        raise JaegerInstallError(_explain(f"build {MODULE}/cmd/jaeger@{version}", build, env))
    partial.rename(target)
    return target


def _explain(what: str, result: subprocess.CompletedProcess[str], env: Mapping[str, str]) -> str:
    output = (result.stdout or "") + (result.stderr or "")
    # `go mod download -json` reports its error inside the JSON on stdout
    with contextlib.suppress(ValueError, KeyError, TypeError):
        output = str(json.loads(result.stdout)["Error"]) + "\n" + (result.stderr or "")
    if any(marker in output for marker in _UNREACHABLE):
        proxy = env.get("GOPROXY") or "https://proxy.golang.org (Go's default)"
        return (
            f"cannot reach the Go module proxy {proxy} to {what}: check the network, or set "
            f"GOPROXY to a reachable proxy (Go said: {_tail(output, 1)})"
        )
    return f"go could not {what} (exit code {result.returncode}): {_tail(output)}"


def _tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])[:500] or "(no output)"


def _run(
    command: Sequence[str], env: Mapping[str, str], cwd: Path | None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), env=dict(env), cwd=cwd, capture_output=True, text=True)


def main(argv: Sequence[str] | None = None, *, say: Callable[[str], None] = print) -> int:
    """0 when Jaeger is (now) installed, 1 with a one-line reason when it could not be."""
    parser = argparse.ArgumentParser(
        prog="python -m hosting.servers.jaeger_install",
        description=f"Build the Jaeger v2 binary ({MODULE}@{VERSION}) into the cache.",
    )
    parser.add_argument(
        "--idle",
        action="store_true",
        help="build at the idle CPU priority: only with CPU time nothing else wants",
    )
    if parser.parse_args(argv).idle:
        _take_idle_priority()
    settings = Settings.from_env()
    existing = installed(settings)
    if existing is not None:
        say(f"Jaeger {VERSION} is installed: {existing}")
        return 0
    say(f"building Jaeger {VERSION} with Go (first build: a few minutes) ...")
    started = time.monotonic()
    try:
        path = install(settings)
    except JaegerInstallError as exc:
        say(f"error: {exc}")
        return 1
    say(f"Jaeger {VERSION} built in {time.monotonic() - started:.0f} s: {path}")
    return 0


def _take_idle_priority() -> None:
    """This process and the Go processes it starts run only when a core would be idle otherwise
    (``SCHED_IDLE``; where that is refused, the lowest nice value)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
