"""Argument types the ``mesh`` verbs share: a wrong value is argparse's one-line usage error."""

from __future__ import annotations

import argparse


def positive_seconds(text: str) -> float:
    """A positive number of seconds (``--wait-timeout``, ``mesh history --wait``)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"give a number of seconds above 0, not {text!r}")
    return value


def add_wait_options(parser: argparse.ArgumentParser, until: str) -> None:
    """``--no-wait`` and ``--wait-timeout`` of a verb that returns once the mesh can alert
    (`mesh up`, `mesh compose up`); ``until`` says when ``--no-wait`` returns instead."""
    parser.add_argument(
        "--no-wait", dest="wait", action="store_false",
        help=f"return {until}, without waiting until the mesh can alert",
    )  # fmt: skip
    parser.add_argument(
        "--wait-timeout", type=positive_seconds, default=300.0, metavar="SECONDS",
        help="the longest to wait until the mesh can alert (default 300; then exit 1)",
    )  # fmt: skip
