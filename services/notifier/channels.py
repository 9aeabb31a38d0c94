"""The routing file's channels made real: a sender, a breaker and a worker pool for each.

Also the one place that says what happens after a failed attempt (:func:`next_attempt_in`), so a
webhook and a file channel retry by the same rule: backoff with jitter while attempts are left and
the failure may clear, then FAILED and a dead letter.
"""

from __future__ import annotations

from pathlib import Path

from services.notifier.breaker import Breaker
from services.notifier.config import NotifierConfig
from services.notifier.dispatch import Dispatcher, Sender
from services.notifier.file_channel import FileSender
from services.notifier.outcome import Outcome
from services.notifier.rules import Routing
from services.notifier.webhook import WebhookSender, retry_delay
from shared.notifier_channels import Channel, FileChannel


def open_channels(routing: Routing, config: NotifierConfig, home: Path) -> Dispatcher:
    """A dispatcher over every channel the routing file declares."""
    senders: dict[str, Sender] = {}
    for name, channel in routing.channels.items():
        if isinstance(channel, FileChannel):
            senders[name] = FileSender(channel, home)
        else:
            senders[name] = WebhookSender(channel)
    return Dispatcher(
        senders,
        {name: channel.concurrency for name, channel in routing.channels.items()},
        {name: Breaker(config.breaker_failures, config.breaker_cooldown_s)
         for name in routing.channels},
    )  # fmt: skip


def next_attempt_in(channel: Channel, attempts: int, outcome: Outcome) -> float | None:
    """Seconds until the next attempt after ``attempts`` attempts ended in ``outcome`` (not
    delivered), or None: the failure is final (a 4xx) or the channel's attempts are spent."""
    if not outcome.retriable or attempts >= channel.max_attempts:
        return None
    return retry_delay(channel, attempts, outcome.retry_after_s)
