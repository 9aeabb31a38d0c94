"""When a replica counts as unhealthy, and what the reason says."""

from control.deploy.health import problem
from control.deploy.instances import InstanceView
from shared.process_usage import ProcessUsage


def view(**changes):
    base = dict(
        process="detector-x-r2-0",
        index=0,
        seq=2,
        supervisor="running",
        pid=123,
        child_started=1.0,
        restarts=0,
        last_exit=None,
        report={"state": "running", "error_rate": 0.0},
        usage=ProcessUsage(1.0, 1 << 20, 1 << 20),
    )
    return InstanceView(**{**base, **changes})


def test_a_running_replica_with_few_failures_is_healthy():
    assert problem(view(report={"state": "running", "error_rate": 0.05}), 0.2) is None


def test_a_restart_is_unhealthy_and_names_the_exit():
    reason = problem(view(restarts=1, last_exit="killed by SIGKILL"), 0.2)
    assert reason == "detector-x-r2-0 died: killed by SIGKILL"


def test_waiting_in_backoff_is_unhealthy_even_before_the_restart_is_counted():
    reason = problem(view(supervisor="backoff", pid=None, last_exit="exit code 3: too many"), 0.2)
    assert reason is not None and "exit code 3: too many" in reason


def test_a_failed_report_is_unhealthy_with_the_runtime_error():
    report = {"state": "failed", "last_error": "ZeroDivisionError: division by zero"}
    assert "ZeroDivisionError" in problem(view(report=report), 0.2)


def test_an_error_rate_over_the_limit_is_unhealthy():
    report = {"state": "running", "error_rate": 0.5, "records": 400}
    reason = problem(view(report=report), 0.2)
    assert reason == "detector-x-r2-0 fails 50% of its records (limit 20%)"


def test_the_error_rate_of_the_first_few_records_is_not_judged_yet():
    report = {"state": "running", "error_rate": 1.0, "records": 1}
    assert problem(view(report=report), 0.2) is None


def test_a_stopped_supervisor_is_not_running():
    assert "is not running" in problem(view(supervisor="stopped", pid=None), 0.2)
