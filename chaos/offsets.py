"""Committed offsets never go backwards (the suite's case 12, checked during every case).

A watcher samples a group's committed offsets on its input topics every SAMPLE_S from a thread
for as long as a case runs, and remembers every partition whose committed offset came back lower
than one seen before: a rebalance or restart that committed an older position would make the
group read a range twice (or, committed ahead by a bug and then back, hide a loss).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from shared.errors import MeshError
from shared.kafka.inspect import group_lag

SAMPLE_S = 0.5


@dataclass
class OffsetWatch:
    bootstrap: str
    group: str
    topics: list[str]
    #: the client settings that log in to a secure cluster
    login: dict[str, Any] = field(default_factory=dict)
    #: (topic, partition, earlier offset, later offset) of every step back
    regressions: list[tuple[str, int, int, int]] = field(default_factory=list)
    samples: int = 0
    _highest: dict[tuple[str, int], int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> OffsetWatch:
        self._thread = threading.Thread(target=self._run, name="offset-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            try:
                committed = group_lag(
                    self.bootstrap, self.group, self.topics, 5, self.login
                ).committed
            except MeshError:  # the coordinator is moving (a broker fault case): ask again
                continue
            self.samples += 1
            for key, offset in committed.items():
                if offset is None:
                    continue
                before = self._highest.get(key)
                if before is not None and offset < before:
                    self.regressions.append((key[0], key[1], before, offset))
                self._highest[key] = max(offset, before or 0)
