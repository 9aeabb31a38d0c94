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
