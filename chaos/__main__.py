"""``python -m chaos [--short] [CASE ...]``: run the reliability cases on a broker of their own.

Prints one line per case (sent, acknowledged, seen, lost, duplicated, reordered, recovery time,
verdict) as each ends, then exits 1 if any case failed. The broker is private (a temporary
MESH_HOME, a free port on 127.0.0.1) and stopped at the end, so a case's faults never touch a
mesh you run. ``--short`` runs each case with less load for less time (what `make test` runs).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from chaos.cases import CASES
from hosting.servers.broker import LocalBroker
from hosting.servers.ports import ephemeral_port
from shared.errors import MeshError
from shared.settings import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    parser.add_argument("cases", nargs="*", help=f"default: all of {', '.join(CASES)}")
    parser.add_argument("--short", action="store_true", help="less load, less time")
    args = parser.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {', '.join(CASES)}")

    failed = []
    suite_began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mesh-chaos-") as tmp:
        base = replace(Settings.from_env(), home=Path(tmp) / "broker", bootstrap_servers="",
                       broker_port=ephemeral_port("127.0.0.1"))  # fmt: skip
        broker = LocalBroker(base)
        try:
            info, _ = broker.ensure_started()
            settings = replace(base, bootstrap_servers=info.bootstrap)
            for name in args.cases or list(CASES):
                work = Path(tmp) / name
                work.mkdir()
                began = time.monotonic()
                try:
                    result = CASES[name](settings, work, args.short)
                except (MeshError, KeyboardInterrupt):
                    raise
                except Exception as error:  # a case that broke down fails; the others still run
                    print(f"{name:<28} FAIL: the case broke off: {type(error).__name__}: {error}",
                          flush=True)  # fmt: skip
                    failed.append(name)
                    continue
                print(f"{result.line()}\n    took {time.monotonic() - began:.0f} s", flush=True)
                if not result.passed:
                    failed.append(name)
        except MeshError as error:
            print(f"chaos: error: {error}", file=sys.stderr)
            return 2
        finally:
            broker.stop()
    minutes, seconds = divmod(int(time.monotonic() - suite_began), 60)
    print(f"chaos: {len(args.cases or CASES)} case(s) in {minutes} min {seconds} s")
    if failed:
        print(f"chaos: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
