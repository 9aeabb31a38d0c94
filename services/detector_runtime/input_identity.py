"""Noticing an input topic deleted and re-created under the same name (case 7 of the suite).

The consumer's positions and the group's committed offsets are numbers in the *old* topic. On
the new one, a position N silently skips the first N records once the new topic holds more
than N (the reliability suite lost exactly those before this module). Kafka gives every topic an
id (KIP-516) that a re-created topic does not share, so the runtime remembers its inputs' ids
and compares:

* when partitions are assigned (a re-created topic's partitions usually come back through a
  rebalance), and
* every CHECK_INTERVAL_S from the loop (in case the consumer never saw the topic gone).

While an input is missing (deleted, not yet re-created) its partitions are paused, so nothing
is read from a topic that may come back new. A changed id is said loudly (an ERROR line and the
status file's ``last_error``) and the topic's partitions are read from the new topic's start:
nothing skipped, nothing twice. Only a re-creation faster than one check interval is noticed
after the fact: then the records consumed meanwhile are processed again (at least once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)

log = logging.getLogger(__name__)

#: Seconds between two id checks from the loop (one small admin request each, ~1 ms here).
CHECK_INTERVAL_S = 1.0
#: How the runtime says it (the suite looks for these words).
REPORT = "was deleted and re-created"


class InputIdentity:
    def __init__(self, admin: Any, topics: Iterable[str]) -> None:
        self._admin = admin
        self._topics = sorted(set(topics))
        self._ids: dict[str, str] = self._describe(self._topics)[0]
        #: inputs found missing at the last check (their partitions are paused)
        self.missing: set[str] = set()
        self._next_check = time.monotonic() + CHECK_INTERVAL_S

    def due(self) -> bool:
        return time.monotonic() >= self._next_check

    def recreated(self, topics: Iterable[str] | None = None) -> list[str]:
        """Which of ``topics`` (default: every input) have a new id since last seen, each said
        once; the new ids are remembered. A topic that is missing now is not judged yet."""
        self._next_check = time.monotonic() + CHECK_INTERVAL_S
        wanted = sorted(set(topics)) if topics is not None else self._topics
        now, missing = self._describe(wanted)
        if topics is None:
            self.missing = missing
        changed = []
        for topic, topic_id in now.items():
            before = self._ids.get(topic)
            if before is not None and before != topic_id:
                log.error(
                    "input topic %s %s (its id went from %s to %s): the committed offsets were "
                    "the old topic's; reading the new one from its start", topic, REPORT,
                    before, topic_id,
                )  # fmt: skip
                changed.append(topic)
            self._ids[topic] = topic_id
        return changed

    def _describe(self, topics: list[str]) -> tuple[dict[str, str], set[str]]:
        """Each topic's id, for the topics the cluster has now, and the topics it says it does
        not have. A topic whose request went unanswered (a broker outage) is in neither: it is
        not judged, and the next check asks again."""

        if not topics:
            return {}, set()
        ids, missing = {}, set()
        futures = self._admin.describe_topics(TopicCollection(topics), request_timeout=5)
        for topic, future in futures.items():
            try:
                ids[topic] = str(future.result(10).topic_id)
            except KafkaException as error:
                if error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    missing.add(topic)
            except Exception:  # the future's own timeout: unanswered, not judged
                continue
        return ids, missing


def from_start_on_assign(partitions: list[Any], recreated: Iterable[str]) -> None:
    """In the assign callback: the partitions of re-created topics start at the beginning (the
    callback's partition list is what gets assigned, offsets included)."""

    topics = set(recreated)
    for partition in partitions:
        if partition.topic in topics:
            partition.offset = OFFSET_BEGINNING


def seek_to_start(consumer: Any, recreated: Iterable[str]) -> None:
    """From the loop: move this instance's partitions of re-created topics to their beginning."""

    topics = set(recreated)
    for partition in consumer.assignment():
        if partition.topic in topics:
            consumer.seek(TopicPartition(partition.topic, partition.partition, OFFSET_BEGINNING))


def pause_missing(consumer: Any, missing: set[str], paused: set[str]) -> set[str]:
    """Pause this instance's partitions of inputs that are missing now and resume those of
    inputs back (a re-created one is moved to its start before, by the caller); returns the
    topics paused now. Each change is logged once."""

    mine = [p for p in consumer.assignment()]
    gone = missing - paused
    back = paused - missing
    if gone:
        consumer.pause([TopicPartition(p.topic, p.partition) for p in mine if p.topic in gone])
        log.warning("input topic(s) %s missing (deleted?): paused until they are back",
                    ", ".join(sorted(gone)))  # fmt: skip
    if back:
        consumer.resume([TopicPartition(p.topic, p.partition) for p in mine if p.topic in back])
        log.info("input topic(s) %s back: resumed", ", ".join(sorted(back)))
    return set(missing)


def report(topics: Iterable[str]) -> str:
    """The status file's line for re-created inputs."""
    names = ", ".join(sorted(topics))
    return (f"input topic(s) {names} {REPORT}: read from the start of the new topic (records of "
            "the old one not yet processed are gone with it)")  # fmt: skip


class InputWatch:
    """What the runner calls: ``on_assign`` from its assign callback, ``check`` from its loop
    when ``due``. Acts on the runner's consumer, its pending commits and its status file."""

    def __init__(
        self, identity: InputIdentity, consumer: Any, committer: Any, status: Any | None
    ) -> None:
        self.identity, self._consumer, self._committer = identity, consumer, committer
        self._status = status
        self._paused: set[str] = set()

    def use(self, consumer: Any, committer: Any) -> None:
        """Act on a new consumer from now on (one that joined again after a fencing)."""
        self._consumer, self._committer = consumer, committer

    def due(self) -> bool:
        return self.identity.due()

    def on_assign(self, partitions: list[Any]) -> None:
        """The new partitions of re-created inputs start at the beginning (not ours yet: no
        seek, their offsets in the callback's list are what is assigned)."""
        recreated = self.identity.recreated({p.topic for p in partitions})
        if recreated:
            from_start_on_assign(partitions, recreated)
            self._recreated(recreated)

    def check(self) -> None:
        """Inputs missing now are paused, and their uncommitted offsets (numbers in a topic
        that is gone; the broker refuses them) dropped; re-created ones start over."""
        recreated = self.identity.recreated()
        if recreated:
            seek_to_start(self._consumer, recreated)
            self._recreated(recreated)
        if self.identity.missing:
            self._committer.forget_topics(sorted(self.identity.missing))
        self._paused = pause_missing(self._consumer, self.identity.missing, self._paused)

    def _recreated(self, topics: list[str]) -> None:
        """Pending commits of re-created inputs are offsets in the old topics: dropped. And the
        operator hears of it."""
        self._committer.forget_topics(topics)
        if self._status is not None:
            self._status.incident(report(topics))
