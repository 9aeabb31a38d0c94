"""The supervisor's restart backoff and how it describes an exit."""

import signal

from control.supervisor import backoff_seconds, describe_exit


def test_backoff_doubles_from_the_base_up_to_the_ceiling():
    delays = [backoff_seconds(n, 1.0, 30.0) for n in range(1, 8)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_exits_are_described_by_code_or_signal_name():
    assert describe_exit(3) == "exit code 3"
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL"
    assert describe_exit(-200) == "killed by signal 200"


def test_a_state_file_that_cannot_be_written_does_not_stop_the_supervisor(tmp_path, capsys):
    from control.supervisor import Supervisor, parser

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")  # a file where the state's folder should be: every write fails
    supervisor = Supervisor(parser().parse_args(["--state", str(blocker / "s.json"), "--", "true"]))
    supervisor._update(state="running")
    supervisor._update(state="backoff")
    assert supervisor.state["state"] == "backoff" and supervisor.state_unwritable
    assert capsys.readouterr().err.count("cannot write") == 1  # said once, not per change


def test_a_child_that_died_on_a_full_disk_is_said_to_have(tmp_path, monkeypatch):
    from control import supervisor as module
    from shared.disk_space import DiskSpace

    full = DiskSpace(tmp_path, 4096, 64 * 2**20, 100, read_only=False)
    monkeypatch.setattr(module, "disk_space", lambda path: full)
    watcher = module.Supervisor(module.parser().parse_args(["--state", str(tmp_path / "s.json"),
                                                            "--", "true"]))  # fmt: skip
    reason = watcher._reason(1, started=0.0)
    assert reason == f"exit code 1 (its disk {tmp_path}: no space left (4.0 KiB free of 64.0 MiB))"


def test_a_state_the_disk_refused_is_written_once_it_takes_writes_again(tmp_path):
    """No further change is needed: a child restarted into a healthy disk may run for days."""
    import json

    from control.supervisor import Supervisor, parser

    blocker = tmp_path / "home"
    blocker.write_text("")  # writes fail while a file stands where the folder should be
    supervisor = Supervisor(parser().parse_args(["--state", str(blocker / "s.json"), "--", "true"]))
    supervisor._update(state="backoff", last_exit="exit code 1 (its disk ...: no space left)")
    assert supervisor.state_unwritable
    blocker.unlink()
    blocker.mkdir()  # the disk takes writes again
    supervisor.last_write_try -= 1.0  # a second has passed
    supervisor._write_again()

    assert not supervisor.state_unwritable
    written = json.loads((blocker / "s.json").read_text())
    assert written["last_exit"] == "exit code 1 (its disk ...: no space left)"
