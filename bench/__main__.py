"""``python -m bench [SCENARIO ...]``: run scenarios, print the table, append JSON results."""

from __future__ import annotations

import argparse
import sys

from bench.comparison import attach, comparison_table
from bench.kafka_fixture import bench_cluster
from bench.result import Result, append_json, table
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
    results: list[Result] = []
    failed: list[str] = []
    try:
        with bench_cluster(Settings.from_env()) as settings:
            for name in wanted:
                print(f"running {name} ...", file=sys.stderr, flush=True)
                try:
                    outcome = SCENARIOS[name](settings)
                except Exception as exc:  # one broken scenario must not lose the others' rows
                    if name == BASELINE:
                        raise
                    failed.append(name)
                    said = str(exc) if isinstance(exc, MeshError) else repr(exc)  # a user's fix
                    print(f"bench: {name} failed: {said}", file=sys.stderr, flush=True)
                    continue
                rows = outcome if isinstance(outcome, list) else [outcome]
                baseline = (results or rows)[0].rate
                for row in rows:
                    row.ratio = row.rate / baseline if baseline and not row.paced else None
                results.extend(rows)
                print(table(rows, header=len(results) == len(rows)), flush=True)
    except MeshError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    print()
    print(table(results))
    compared = comparison_table(results)
    if compared is not None:
        print()
        print(compared)
    attach(results)
    command = "make bench" if not args.scenarios else f"python -m bench {' '.join(args.scenarios)}"
    path = append_json(results, PROJECT_ROOT / "bench-results", command)
    print(f"results appended to {path}")
    if failed:
        print(f"bench: failed scenarios: {', '.join(failed)} (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
