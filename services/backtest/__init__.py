"""Backtests: a detector's ``detect()`` run over the history with Spark, unchanged.

``mesh backtest FOLDER`` (and ``python -m services.backtest``) for the command line, and
:func:`backtest` for a notebook. The replay goes through the runtime's own Task code, per Kafka
partition in the order the streaming runtime read it, so a single-input detector raises exactly
the alerts, with the same ids, that it raised (or would have raised) live.
"""

from services.backtest.api import backtest, replay_history
from services.backtest.inputs import read_history

__all__ = ["backtest", "read_history", "replay_history"]
