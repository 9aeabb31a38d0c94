"""The backtest's one user-facing error: a history it cannot read, a range with nothing in it,
a Spark master that does not answer. Printed as one line; nothing is written."""

from shared.errors import MeshError


class BacktestError(MeshError):
    """A backtest that cannot run, with what to fix."""
