"""Who sends the broker its requests: rates per request type and per client, from the broker's
request log.

The broker's cost is per request (docs/benchmarks.md, its JFR profile), so the question for each
client is how many requests a second it sends, and of which kind. Kafka's ``kafka.request.logger``
at DEBUG logs one ``Completed request:{json}`` line per request, with its ``clientId``; it can be
switched on and off while the broker runs, without a restart:

    java -cp <the broker's classpath> kafka.admin.ConfigCommand --bootstrap-server HOST:PORT \\
        --alter --entity-type broker-loggers --entity-name 1 \\
        --add-config kafka.request.logger=DEBUG      # and =WARN afterwards

(``shared.jar_cache.classpath("kafka", settings)`` is the classpath; the embedded broker's
log4j configuration sends the lines to ``MESH_HOME/kafka/kafka.log``.) Then
``python -m bench.broker.request_log MESH_HOME/kafka/kafka.log`` prints the rates of each
stretch of logging (stretches are apart by more than ``GAP_S``: one logged while idle, one
under load, say).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

MARK = "Completed request:"
#: Seconds without a logged request that separate two stretches of logging.
GAP_S = 5.0
#: Client ids that differ per process or per task, made alike: a trailing number, the group of
#: a Spark Kafka source's consumers (a query id in it), a notifier instance's id.
_SAME_CLIENT = (
    (re.compile(r"consumer-spark-kafka-source-[0-9a-f-]+"), "spark-kafka-source-consumer"),
    (re.compile(r"-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}--?\d+-executor"), "-executor"),
    (re.compile(r"@\S+"), "@<instance>"),
    (re.compile(r"-\d+$"), "-N"),
)  # fmt: skip


@dataclass(frozen=True)
class Request:
    at: float
    api: str
    client: str


def client_kind(client_id: str) -> str:
    """``client_id`` with what changes per process or task replaced, so alike clients add up."""
    for pattern, replacement in _SAME_CLIENT:
        client_id = pattern.sub(replacement, client_id)
    return client_id or "(no client id)"


def parse(lines: Iterable[str]) -> Iterator[Request]:
    """The requests of the request logger's lines; other lines (and torn ones) are skipped."""
    for line in lines:
        start = line.find(MARK)
        if start < 0 or not line.startswith("["):
            continue
        body = line[start + len(MARK) :].rsplit("} (", 1)[0] + "}"
        try:
            header = json.loads(body)["requestHeader"]
            at = datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        except (ValueError, KeyError, TypeError):
            continue
        yield Request(at, header["requestApiKeyName"], client_kind(header.get("clientId") or ""))


def stretches(requests: Iterable[Request], gap_s: float = GAP_S) -> list[list[Request]]:
    """The requests in time order, cut where none was logged for more than ``gap_s``."""
    parts: list[list[Request]] = []
    for request in sorted(requests, key=lambda r: r.at):
        if not parts or request.at - parts[-1][-1].at > gap_s:
            parts.append([])
        parts[-1].append(request)
    return parts


def rates(part: list[Request]) -> tuple[float, Counter[str], Counter[tuple[str, str]]]:
    """The stretch's length in seconds, and its requests per second by type and by (type,
    client)."""
    seconds = max(part[-1].at - part[0].at, 1e-3)
    by_api = Counter(r.api for r in part)
    by_client = Counter((r.api, r.client) for r in part)
    scale = 1.0 / seconds
    return (
        seconds,
        Counter({k: v * scale for k, v in by_api.items()}),
        Counter({k: v * scale for k, v in by_client.items()}),
    )


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m bench.broker.request_log KAFKA_LOG", file=sys.stderr)
        return 2
    try:
        with open(argv[0], errors="replace") as log:
            parts = stretches(parse(log))
    except OSError as exc:
        print(f"request_log: cannot read {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 2
    if not parts:
        print(f"request_log: no `{MARK}` lines in {argv[0]}: was kafka.request.logger at DEBUG?",
              file=sys.stderr)  # fmt: skip
        return 1
    for number, part in enumerate(parts, 1):
        seconds, by_api, by_client = rates(part)
        print(f"stretch {number}: {len(part)} requests over {seconds:.1f} s, "
              f"{len(part) / seconds:.1f}/s")  # fmt: skip
        shown = [f"{api} {rate:.1f}" for api, rate in by_api.most_common() if rate >= 0.05]
        print("  by type: " + ", ".join(shown))
        for (api, client), rate in by_client.most_common():
            if rate >= 0.5:
                print(f"  {rate:8.1f}/s  {api:<28} {client}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
