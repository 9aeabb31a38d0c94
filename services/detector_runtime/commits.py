"""Committing a batch's offsets when the group may be rebalancing under it.

A synchronous commit fails with ILLEGAL_GENERATION / REBALANCE_IN_PROGRESS / UNKNOWN_MEMBER_ID
when another member joined or left while the batch ran (a deploy or rollout of *this* detector
does that on purpose). The batch's output is already acknowledged, so crashing would only turn
one rebalance into a restart loop. Instead the offsets are kept as *pending* and committed again:

* right after the next ``consume()``, which serves the rebalance, for partitions still ours;
* in the revoke callback for partitions being handed over, which librdkafka allows while this
  member still owns them, so the next owner starts at the next unprocessed record;
* before a clean stop leaves the group (:meth:`OffsetCommitter.settle`), after letting the
  rebalance that refused the commit finish.

The same holds while the group's coordinator is away for a moment: a broker that just restarted
answers COORDINATOR_LOAD_IN_PROGRESS while it reloads the committed offsets, and a moved
coordinator NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE. Each is retriable by Kafka's protocol;
crashing on one killed an instance in chaos ``broker_kill`` on a busy machine (issue 29's
session). Those offsets stay pending and go with the next commit. So do offsets of an input
topic deleted since its records were processed (chaos ``topic_recreated``), until the input watch
has them forgotten.

Only a partition that is *lost* (the member was evicted) with pending offsets leaves a batch to
be processed again; :attr:`OffsetCommitter.abandoned` counts those records' partitions so the
duplicates are visible, and bounded by two batches' records each (the staged records, fewer than
a batch, and the batch in progress: see the runner's ``_commit_staged``).

Offsets are not committed after every batch: a batch's next offsets are *staged*
(:meth:`OffsetCommitter.stage`) and the runner commits what is staged once per commit interval
(or once a batch's worth of records waits), after its producers have flushed. Issue 29: one
commit and one flush per batch were ~60 offset commits and ~270 small produce requests a second
from the detectors at 1 000 records/s, and the broker's cost is per request. Staged offsets are
treated like pending ones when partitions are revoked, lost or their topic is re-created.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]


def _deferrable_errors() -> set[int]:
    """Commit errors that mean "not now" (a rebalance, or the coordinator away for a moment)."""

    return {
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.FENCED_INSTANCE_ID,
        KafkaError._STATE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        # The input topic was deleted after its records were processed: the offsets wait, and
        # are dropped once the input watch sees the topic gone or re-created (forget_topics).
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }


class OffsetCommitter:
    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer
        self._pending: dict[TopicPartitionKey, int] = {}
        #: processed, output handed to the producers, not yet committed (see the module docstring)
        self._staged: dict[TopicPartitionKey, int] = {}
        #: how many records the staged offsets cover (the runner commits once a batch's worth)
        self.staged_records = 0
        self._retriable = _deferrable_errors()
        #: commits that failed because of a rebalance (or an absent coordinator), kept for later
        self.deferred = 0
        #: partitions whose pending offsets could not be committed before they were lost
        self.abandoned = 0

    @property
    def pending(self) -> dict[TopicPartitionKey, int]:
        return dict(self._pending)

    @property
    def staged(self) -> dict[TopicPartitionKey, int]:
        return dict(self._staged)

    @property
    def has_staged(self) -> bool:
        return bool(self._staged)

    def stage(self, next_offsets: dict[TopicPartitionKey, int], records: int) -> None:
        """Remember a processed batch's next offsets (``records`` records) until the next
        :meth:`take_staged`."""
        self._staged.update(next_offsets)
        self.staged_records += records

    def take_staged(self) -> dict[TopicPartitionKey, int]:
        """The staged offsets, for the commit that follows the producers' flush."""
        staged, self._staged = self._staged, {}
        self.staged_records = 0
        return staged

    def commit(self, next_offsets: dict[TopicPartitionKey, int]) -> bool:
        """Commit ``next_offsets`` (and whatever is pending); False if deferred by a rebalance."""
        offsets = {**self._pending, **next_offsets}
        if not offsets:
            return True
        if self._try(offsets):
            self._pending.clear()
            return True
        self._pending = offsets
        self.deferred += 1
        return False

    def retry_owned(self) -> None:
        """After a ``consume()``: commit pending offsets of partitions this member still owns."""
        if not self._pending:
            return
        owned = {(tp.topic, tp.partition) for tp in self._consumer.assignment()}
        mine = {tp: o for tp, o in self._pending.items() if tp in owned}
        for tp in set(self._pending) - owned:  # handed over without a commit: see on_lost
            self._drop(tp)
        if mine and self._try(mine):
            for tp in mine:
                self._pending.pop(tp, None)

    def settle(self, timeout: float) -> None:
        """Before leaving the group: let a rebalance in progress finish (polling serves it) and
        commit what is pending, so a clean stop never hands over an uncommitted batch. Records
        fetched meanwhile are not processed, so not committed: the next owner reads them."""
        deadline = time.monotonic() + timeout
        while self._pending and time.monotonic() < deadline:
            self._consumer.poll(0.2)
            self.retry_owned()

    def on_revoke(self, partitions: list[Any]) -> None:
        """In the revoke callback: commit what is pending for the partitions being handed over."""
        handed = {(p.topic, p.partition) for p in partitions}
        offsets = {tp: o for tp, o in self._pending.items() if tp in handed}
        if offsets and not self._try(offsets):
            for tp in offsets:
                self._drop(tp)
            return
        for tp in offsets:
            self._pending.pop(tp, None)

    def forget_topics(self, topics: list[str]) -> None:
        """Drop pending and staged offsets that no longer mean anything (their topic was
        re-created)."""
        for offsets in (self._pending, self._staged):
            for tp in [tp for tp in offsets if tp[0] in topics]:
                offsets.pop(tp, None)

    def on_lost(self, partitions: list[Any]) -> None:
        """Lost partitions cannot be committed: their pending or staged records will be
        processed again."""
        for p in partitions:
            tp = (p.topic, p.partition)
            if tp in self._pending or tp in self._staged:
                self._drop(tp)

    def _drop(self, tp: TopicPartitionKey) -> None:
        self._pending.pop(tp, None)
        self._staged.pop(tp, None)
        self.abandoned += 1
        log.warning("%s[%d]: its last records were not committed and will be processed again",
                    *tp)  # fmt: skip

    def _try(self, offsets: dict[TopicPartitionKey, int]) -> bool:
        try:
            self._consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                asynchronous=False,
            )
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() not in self._retriable:
                raise
            log.info("commit deferred (a rebalance, or the coordinator away): %s", error.str())
            return False
        return True
