"""Benchmark scenarios, one module each; SCENARIOS maps a name to its runner."""

from collections.abc import Callable

from bench.result import Result
from bench.scenarios import (
    autoscale,
    backtest,
    checkpoint_interval,
    cold_start,
    containers,
    deploy,
    detectors,
    e2e_latency,
    generator,
    history_cpu,
    ingest,
    kstreams,
    metrics,
    naive_loop,
    notifier,
    notifier_hop,
    raw_pipe,
    state_scale,
    tracing,
)
from shared.settings import Settings

SCENARIOS: dict[str, Callable[[Settings], Result | list[Result]]] = {
    "raw_pipe": raw_pipe.run_throughput,
    "raw_pipe_latency": raw_pipe.run_latency,
    "generate": generator.run_generate,
    "produce": generator.run_produce,
    "ingest": ingest.run_throughput,
    "ingest_real_time": ingest.run_real_time_throughput,
    "ingest_latency": ingest.run_latency,
    "naive_large_amount": naive_loop.run_naive_large_amount,
    **detectors.SCENARIOS,
    **kstreams.SCENARIOS,
    "state_scale": state_scale.run_state_scale,
    "deploy": deploy.run_deploy,
    "autoscale": autoscale.run_autoscale,
    "metrics": metrics.run_all,
    "tracing": tracing.run_tracing,
    "e2e_latency": e2e_latency.run_e2e,
    "checkpoint_interval": checkpoint_interval.run_checkpoint_intervals,
    "cold_start": cold_start.run_cold_start,
    "containers": containers.run_all,
    "notifier": notifier.run_all,
    "notifier_hop": notifier_hop.run_all,
    "backtest": backtest.run_backtest_bench,
    "history_cpu": history_cpu.run_history_cpu,
}
