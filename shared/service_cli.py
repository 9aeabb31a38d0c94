"""A service's command line: a mistake is one line on stderr and exit status 2, never a stack
trace or argparse's usage block (the supervisor would restart it forever and the log would fill
with usage text)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn


class UsageError(Exception):
    """A command-line mistake; the message says which."""


class ServiceArgumentParser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def parse_service_args(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None, name: str
) -> argparse.Namespace | int:
    """The parsed arguments, or the exit status once a mistake was told in one line (2) or
    ``--help`` printed (0)."""
    try:
        return parser.parse_args(argv)
    except UsageError as error:
        print(f"{name}: error: {error} (see --help)", file=sys.stderr)
        return 2
    except SystemExit as done:  # --help
        return int(done.code or 0)
