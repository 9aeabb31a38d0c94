"""Every detector row against every peer measured in the same run, as one table of ratios.

One baseline per run says little about a detector runtime: a user holds it against the raw pipe
on the same records (the limit), against the loop they would write by hand, and against the
stream processors they would otherwise pick (Kafka Streams, faust). The peers are whichever of
those the run measured; each detector row gets its rate divided by each peer's, from the same run
on the same broker, so machine speed and load cancel out.
"""

from __future__ import annotations

from bench.result import Result

#: The peer rows, in the order of the table's columns, with a short column title.
PEERS: dict[str, str] = {
    "raw_pipe_avro_feed": "pipe",
    "naive_large_amount": "naive",
    "kstreams_large_amount": "ks_stateless",
    "kstreams_tumbling": "ks_tumbling",
    "kstreams_hopping": "ks_hopping",
    "faust_agent": "faust",
    "faust_table": "faust_hop",
}
DETECTOR_PREFIX = "detector_"


def ratios(results: list[Result]) -> dict[str, dict[str, float]]:
    """detector row -> peer row -> the detector's rate divided by the peer's."""
    peers = {r.scenario: r.rate for r in results if r.scenario in PEERS and r.rate > 0}
    return {
        r.scenario: {peer: r.rate / rate for peer, rate in peers.items()}
        for r in results
        if r.scenario.startswith(DETECTOR_PREFIX)
    }


def attach(results: list[Result]) -> None:
    """Store each detector row's ratios in its ``extra`` (``vs_<peer>``), for the JSON lines."""
    table_of = ratios(results)
    for r in results:
        for peer, ratio in table_of.get(r.scenario, {}).items():
            r.extra[f"vs_{peer}"] = round(ratio, 3)


def comparison_table(results: list[Result]) -> str | None:
    """The detector rows against the peers as aligned text; None when either side is missing."""
    table_of = ratios(results)
    present = [p for p in PEERS if any(p in row for row in table_of.values())]
    if not table_of or not present:
        return None
    widths = [max(len(PEERS[p]), 6) for p in present]
    title = f"{'detector / peer':<24} " + " ".join(
        f"{PEERS[p]:>{w}}" for p, w in zip(present, widths, strict=True)
    )
    lines = [title, "-" * len(title)]
    for name, row in table_of.items():
        cells = " ".join(f"{row[p]:>{w}.2f}" for p, w in zip(present, widths, strict=True))
        lines.append(f"{name:<24} {cells}")
    rates = ", ".join(
        f"{PEERS[r.scenario]} {r.rate:,.0f}/s" for r in results if r.scenario in present
    )
    lines.append(f"(detector records/s divided by the peer's, same run; peers: {rates})")
    return "\n".join(lines)
