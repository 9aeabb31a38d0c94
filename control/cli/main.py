"""Entry point of the ``mesh`` command.

Each verb module exposes ``register(subparsers)``, which adds its parser and sets ``handler`` to a
function ``(args, settings) -> exit code``. User mistakes (a :class:`MeshError`) print one line
and exit 2; only genuine bugs show a stack trace.
"""

from __future__ import annotations

import argparse
import os
import sys

from control.cli import (
    backtest,
    broker,
    compose,
    deploy,
    history,
    ingest,
    produce,
    services,
    settings,
    status,
    topics,
    world,
)
from shared.errors import MeshError
from shared.settings import Settings

VERB_MODULES = (
    world, status, settings, deploy, services, ingest, history, backtest, broker, topics, produce,
    compose,
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mesh",
        description="Detector Mesh: run, inspect and load-test the local mesh.",
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    subparsers.required = True
    for module in VERB_MODULES:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
        return int(args.handler(args, settings))
    except MeshError as exc:
        print(f"mesh: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mesh: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `mesh settings | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
