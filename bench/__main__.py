"""``python -m bench [SCENARIO ...]``: run scenarios, print the table, append JSON results."""

from __future__ import annotations

import argparse
import sys

from bench.kafka_fixture import bench_cluster
from bench.result import append_json, table
from bench.scenarios import SCENARIOS
from shared.errors import MeshError
from shared.settings import PROJECT_ROOT, Settings

BASELINE = "raw_pipe"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("scenarios", nargs="*", help=f"default: all of {', '.join(SCENARIOS)}")
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; choose from {', '.join(SCENARIOS)}")
    wanted = [BASELINE, *[s for s in args.scenarios or SCENARIOS if s != BASELINE]]
    try:
        with bench_cluster(Settings.from_env()) as settings:
            results = []
            for name in wanted:
                print(f"running {name} ...", file=sys.stderr, flush=True)
                outcome = SCENARIOS[name](settings)
                results.extend(outcome if isinstance(outcome, list) else [outcome])
    except MeshError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    baseline = results[0].rate
    for result in results:
        result.ratio = result.rate / baseline if baseline and not result.paced else None
    print(table(results))
    command = "make bench" if not args.scenarios else f"python -m bench {' '.join(args.scenarios)}"
    path = append_json(results, PROJECT_ROOT / "bench-results", command)
    print(f"results appended to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
