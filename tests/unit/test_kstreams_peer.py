"""The Kafka Streams peer's Python side: build stamp, cache layout, command line, result line.

Maven and Java are replaced by fakes here; the peer itself runs in the bench, on a broker.
"""

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

import bench.kstreams_peer as peer
from shared.settings import PROJECT_ROOT, Settings

RESULT = {"records": 10, "seconds": 0.5, "alerts": 2, "mode": "large_amount", "rss_mb": 300.0}


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A fake peer project: a POM and two Java files."""
    root = tmp_path / "kstreams"
    java = root / "src" / "main" / "java" / "mesh" / "bench"
    java.mkdir(parents=True)
    (root / "pom.xml").write_text("<project/>")
    (java / "StreamsPeer.java").write_text("class StreamsPeer {}")
    (java / "Mode.java").write_text("enum Mode {}")
    return root


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return replace(Settings.from_env({}), cache=tmp_path / "cache", bootstrap_servers="h:1")


class FakeMaven:
    """Stands for ``subprocess.run`` of Maven: leaves what ``package`` leaves, or fails."""

    def __init__(self, returncode: int = 0, output: str = "") -> None:
        self.returncode, self.output = returncode, output
        self.calls: list[list[str]] = []

    def __call__(self, command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        self.calls.append(command)
        target = Path(command[command.index("-f") + 1]).parent / "target"
        if self.returncode == 0:
            (target / "deps").mkdir(parents=True)
            (target / peer.JAR).write_bytes(b"PK")
            (target / "deps" / "kafka-streams-4.1.1.jar").write_bytes(b"PK")
        return subprocess.CompletedProcess(command, self.returncode, self.output, "")


@pytest.fixture
def maven(monkeypatch: pytest.MonkeyPatch) -> FakeMaven:
    fake = FakeMaven()
    monkeypatch.setattr(peer.subprocess, "run", fake)
    monkeypatch.setattr(peer, "require_tools", lambda: None)
    return fake


# --- the build stamp ---------------------------------------------------------------------------
def test_the_hash_follows_the_pom_the_sources_and_their_names(sources):
    first = peer.source_hash(sources)
    assert peer.source_hash(sources) == first
    (sources / "pom.xml").write_text("<project><!-- changed --></project>")
    after_pom = peer.source_hash(sources)
    java = sources / "src" / "main" / "java" / "mesh" / "bench"
    (java / "Mode.java").write_text("enum Mode { A }")
    after_java = peer.source_hash(sources)
    (java / "Mode.java").rename(java / "Modes.java")
    after_rename = peer.source_hash(sources)
    assert len({first, after_pom, after_java, after_rename}) == 4


def test_maven_output_does_not_count_as_source(sources):
    before = peer.source_hash(sources)
    (sources / "target" / "classes").mkdir(parents=True)
    (sources / "target" / "classes" / "StreamsPeer.class").write_bytes(b"\xca\xfe")
    assert peer.source_hash(sources) == before


def test_the_project_own_sources_are_what_is_hashed():
    names = {p.name for p in peer.source_files()}
    assert {"pom.xml", "StreamsPeer.java"} <= names


# --- building into the cache -------------------------------------------------------------------
def test_a_build_lands_in_the_cache_with_its_stamp(settings, sources, maven):
    folder = peer.build(settings, sources=sources)
    assert folder == settings.cache / "kstreams"
    assert (folder / peer.JAR).is_file()
    assert [p.name for p in (folder / "deps").iterdir()] == ["kafka-streams-4.1.1.jar"]
    assert (folder / peer.STAMP).read_text().strip() == peer.source_hash(sources)
    assert peer.is_fresh(settings, sources)
    assert not (sources / "target").exists()  # Maven ran on a copy
    assert [p.name for p in folder.parent.iterdir()] == ["kstreams"]  # no staging left


def test_a_fresh_build_is_reused_and_a_changed_source_rebuilds(settings, sources, maven):
    peer.build(settings, sources=sources)
    peer.build(settings, sources=sources)
    assert len(maven.calls) == 1
    (sources / "src" / "main" / "java" / "mesh" / "bench" / "Mode.java").write_text("enum M {}")
    assert not peer.is_fresh(settings, sources)
    peer.build(settings, sources=sources)
    assert len(maven.calls) == 2
    assert peer.is_fresh(settings, sources)


def test_an_incomplete_cache_is_not_fresh(settings, sources, maven):
    folder = peer.build(settings, sources=sources)
    (folder / peer.JAR).unlink()
    assert not peer.is_fresh(settings, sources)


def test_maven_runs_against_central_only_and_packages():
    command = peer.maven_command(Path("/x/sources"))
    assert command[:3] == ["mvn", "-B", "-q"]
    assert command[command.index("-s") + 1] == str(PROJECT_ROOT / "infra/maven/settings.xml")
    assert command[command.index("-f") + 1] == "/x/sources/pom.xml"
    assert command[-1] == "package"


def test_a_compile_error_is_one_line_pointing_at_the_sources(settings, sources, monkeypatch):
    def failing(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        copy = Path(command[command.index("-f") + 1]).parent
        output = (
            "[ERROR] COMPILATION ERROR : \n"
            f"[ERROR] {copy}/src/main/java/mesh/bench/Mode.java:[3,5] cannot find symbol\n"
            "[ERROR] Failed to execute goal ... Compilation failure\n"
        )
        return subprocess.CompletedProcess(command, 1, output, "")

    monkeypatch.setattr(peer.subprocess, "run", failing)
    monkeypatch.setattr(peer, "require_tools", lambda: None)
    with pytest.raises(peer.StreamsPeerError) as caught:
        peer.build(settings, sources=sources)
    message = str(caught.value)
    assert "\n" not in message
    assert f"{sources}/src/main/java/mesh/bench/Mode.java:[3,5] cannot find symbol" in message
    assert not (settings.cache / "kstreams").exists()
    assert list((settings.cache).iterdir()) == []  # the staging folder went too


def test_an_unreachable_central_says_so(settings, sources, monkeypatch):
    fake = FakeMaven(1, "[ERROR] Could not transfer artifact org.apache.kafka:kafka-streams")
    monkeypatch.setattr(peer.subprocess, "run", fake)
    monkeypatch.setattr(peer, "require_tools", lambda: None)
    with pytest.raises(peer.StreamsPeerError, match="cannot reach Maven Central"):
        peer.build(settings, sources=sources)


def test_the_project_build_error_names_its_folder():
    message = peer.explain_build_failure("[ERROR] boom", Path("/tmp/copy"))
    assert message.startswith("cannot build the Kafka Streams peer (bench/kstreams): ")


# --- the command line ----------------------------------------------------------------------------
def test_the_command_runs_the_main_class_with_every_argument(settings):
    folder = Path("/cache/kstreams")
    command = peer.command(folder, settings, "hopping_count", "in", "out", 147_416)
    assert command[0] == "java"
    assert peer.HEAP in command
    assert (
        command[command.index("-cp") + 1]
        == "/cache/kstreams/streams-peer.jar:/cache/kstreams/deps/*"
    )
    main = command.index(peer.MAIN_CLASS)
    schema, thresholds = Path(command[main + 6]), Path(command[main + 7])
    assert command[main + 1 : main + 6] == ["hopping_count", "h:1", "in", "out", "147416"]
    assert schema == settings.schemas_dir / "transaction" / _latest("transaction", settings)
    assert thresholds == PROJECT_ROOT / "detectors" / "large_amount" / "thresholds.yaml"
    assert len(command) == main + 8


def _latest(name: str, settings: Settings) -> str:
    versions = (settings.schemas_dir / name).glob("v*.avsc")
    return max(versions, key=lambda p: int(p.stem[1:])).name


# --- the result line and failures ---------------------------------------------------------------
def test_the_result_is_the_last_json_line_with_every_figure():
    stdout = "\n".join(
        ["warming up", json.dumps({"records": 1}), json.dumps(RESULT), "trailing noise"]
    )
    assert peer.parse_result(stdout) == RESULT


def test_no_result_line_is_an_error_quoting_stderr():
    with pytest.raises(peer.StreamsPeerError, match=r"no result line:\n  error: boom"):
        peer.parse_result('{"records": 3}\n', "error: boom\n")


def test_stderr_is_quoted_by_its_last_lines():
    quoted = peer._quoted("\n".join(f"line {i}" for i in range(30)))
    assert quoted.count("\n") == peer.STDERR_LINES
    assert quoted.endswith("line 29") and "line 19" not in quoted
    assert peer._quoted("") == " (nothing on stderr)"


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> Settings:
    monkeypatch.setattr(peer, "build", lambda s: Path("/cache/kstreams"))
    return settings


def test_a_run_returns_the_figures(built, monkeypatch):
    monkeypatch.setattr(peer, "_run_process", lambda args, t: (0, json.dumps(RESULT) + "\n", ""))
    assert peer.run(built, "large_amount", "in", "out", 10) == RESULT


def test_a_failed_run_raises_with_the_end_of_stderr(built, monkeypatch):
    stderr = "noise\nerror: no record arrived within 120 s\n"
    monkeypatch.setattr(peer, "_run_process", lambda args, t: (2, "", stderr))
    with pytest.raises(peer.StreamsPeerError, match=r"exit status 2:\n  noise\n  error: no rec"):
        peer.run(built, "tumbling_count", "in", "out", 10)


def test_a_run_past_its_time_says_so(built, monkeypatch):
    monkeypatch.setattr(peer, "_run_process", lambda args, t: (None, "", ""))
    with pytest.raises(peer.StreamsPeerError, match="did not finish within 5 s"):
        peer.run(built, "large_amount", "in", "out", 10, timeout_s=5)


def test_an_unknown_mode_is_refused_before_anything_runs(built):
    with pytest.raises(peer.StreamsPeerError, match="unknown Kafka Streams peer mode"):
        peer.run(built, "sliding", "in", "out", 10)


def test_a_process_past_its_time_is_stopped():
    status, _, _ = peer._run_process(["sleep", "30"], timeout_s=0.2)
    assert status is None
