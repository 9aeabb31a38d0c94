"""Shared fixtures: one real Kafka broker per test session, private names per test.

The broker starts lazily, the first time an integration test asks for it, so the unit tests run
without one. When MESH_BOOTSTRAP_SERVERS is set the tests use that cluster and start nothing.
Every test gets its own topics and consumer groups (uuid-suffixed names), so tests never see each
other's data and need no cleanup between them.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from kafka_leaders import wait_for_leaders

from hosting.servers.broker import LocalBroker
from shared.settings import Settings


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of a real Kafka broker shared by the whole session."""
    external = os.environ.get("MESH_BOOTSTRAP_SERVERS")
    if external:
        yield external
        return
    home = tmp_path_factory.mktemp("mesh-home")
    settings = replace(Settings.from_env(), home=home, broker_port=0, bootstrap_servers="")
    broker = LocalBroker(settings)
    info, _ = broker.ensure_started()
    try:
        yield info.bootstrap
    finally:
        broker.stop()


@pytest.fixture
def mesh_settings(kafka_bootstrap: str, tmp_path: Path) -> Settings:
    """Settings that point at the session's broker, with a private MESH_HOME."""
    return replace(Settings.from_env(), bootstrap_servers=kafka_bootstrap, home=tmp_path / "mesh")


@pytest.fixture
def unique_name() -> Callable[[str], str]:
    """``unique_name("orders")`` -> ``orders-3f9c1a2b``: names no other test uses."""

    def make(prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    return make


@pytest.fixture
def create_topics(kafka_bootstrap: str) -> Iterator[Callable[..., list[str]]]:
    """Create topics for one test; they are deleted afterwards (matters on a shared cluster)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    created: list[str] = []

    def create(
        names: list[str], partitions: int = 1, config: dict[str, str] | None = None
    ) -> list[str]:
        futures = admin.create_topics(
            [NewTopic(n, partitions, 1, config=config or {}) for n in names], request_timeout=30
        )
        for future in futures.values():
            future.result()
        created.extend(names)
        wait_for_leaders(admin, names)
        return names

    yield create
    if created:
        for future in admin.delete_topics(created, request_timeout=30).values():
            # Best-effort cleanup: it must not hide the test's own result.
            with contextlib.suppress(Exception):
                future.result()


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One local[2] SparkSession for the whole test session (it takes seconds to start)."""
    from shared.spark_session import spark_session, stop_spark

    home = tmp_path_factory.mktemp("spark-home")
    settings = replace(Settings.from_env(), home=home)
    session = spark_session("detector-mesh-tests", settings, "local[2]", 2, delta=True)
    yield session
    stop_spark(session)


@pytest.fixture(autouse=True)
def _no_streaming_query_left(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """A streaming query a test leaves running in the shared session goes on polling Kafka and
    taking CPU under every later test (a CI run saw a Spark start time out behind one): stop
    what is left and fail the test that left it."""
    yield
    if "spark" not in request.fixturenames:
        return
    left = list(request.getfixturevalue("spark").streams.active)
    for query in left:
        query.stop()
    assert not left, f"streaming queries left running: {[q.name or q.id for q in left]}"


@dataclass(frozen=True)
class PrivateMesh:
    """A mesh of this test's own on the session broker: its MESH_HOME, topics and groups.

    ``env`` is what a `mesh` command needs to act on it; ``settings`` the same for in-process
    calls; ``topic(name)`` the private name of a contract topic.
    """

    env: dict[str, str]
    settings: Settings
    prefix: str

    def topic(self, name: str) -> str:
        return self.prefix + name


@pytest.fixture
def private_mesh(
    kafka_bootstrap: str, tmp_path: Path, unique_name: Callable[[str], str]
) -> Iterator[PrivateMesh]:
    """Every declared topic under a unique MESH_TOPIC_PREFIX, created; detectors stopped and
    topics deleted afterwards (the broker is shared by the whole session)."""
    from confluent_kafka.admin import AdminClient

    from control.cli.topics import apply_declared
    from control.deploy.lifecycle import down
    from shared.local_process import stop_strays

    prefix = unique_name("mesh") + "."
    env = {
        "MESH_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "MESH_HOME": str(tmp_path / "home"),
        "MESH_TOPIC_PREFIX": prefix,
    }
    settings = Settings.from_env(env)
    assert apply_declared(settings) == 0
    try:
        yield PrivateMesh(env, settings, prefix)
    finally:
        down(settings, say=lambda line: None)
        strays = stop_strays(settings.home)
        admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
        names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
        if names:
            for future in admin.delete_topics(names, request_timeout=30).values():
                with contextlib.suppress(Exception):  # best effort, as in create_topics
                    future.result()
    # After the cleanup, so a lost process is stopped before the test is failed for it.
    assert not strays, f"processes of this mesh outlived `down` (pid files lost): {strays}"


@dataclass(frozen=True)
class InfluxServer:
    """The session's InfluxDB: ``url`` (``http://127.0.0.1:<port>``) and a database created for
    this session; tests that need isolation use their own database or measurement names."""

    url: str
    database: str


@pytest.fixture(scope="session")
def influxdb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InfluxServer]:
    """A real InfluxDB 1.x (Debian's influxd) on loopback, shared by the whole session.

    When influxd is missing, ``python -m hosting.servers.influx_install`` runs first (the CI
    machine is root, so `make test` works on a fresh machine); if that cannot install it the
    tests fail with its message rather than skip, so a missing InfluxDB is never mistaken for a
    pass.
    """
    import subprocess
    import sys

    from hosting.servers.influx import LocalInflux, installed
    from shared.influx.writer import InfluxWriter

    if not installed():
        result = subprocess.run(
            [sys.executable, "-m", "hosting.servers.influx_install"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if result.returncode != 0 or not installed():
            pytest.fail(f"InfluxDB is needed and could not be installed: {result.stdout.strip()}")
    home = tmp_path_factory.mktemp("influx-home")
    server = LocalInflux(replace(Settings.from_env(), home=home, influx_port=0))
    url = server.start()
    try:
        database = f"tests_{uuid.uuid4().hex[:8]}"
        InfluxWriter(url, database).ensure_database()
        yield InfluxServer(url, database)
    finally:
        server.stop()


from shared.endpoints import BackendInfo  # noqa: E402  (the jaeger fixture's type)
from testkit.jaeger_build import BackgroundBuild, needs_jaeger  # noqa: E402

_JAEGER_BUILD = pytest.StashKey["BackgroundBuild"]()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that need Jaeger go last, and Jaeger's build (when it is missing) starts in the
    background now, at idle priority: testkit.jaeger_build says why."""
    later = [item for item in items if _needs_jaeger(item)]
    if not later:
        return
    items[:] = [item for item in items if item not in later] + later
    if config.option.collectonly:
        return
    build = BackgroundBuild.for_settings(Settings.from_env())
    config.stash[_JAEGER_BUILD] = build
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if build.start() and reporter is not None:
        reporter.write_line(
            f"building Jaeger in the background for the {len(later)} tests that need it "
            f"(they run last; log: {build.log_file})"
        )


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """The first test that needs Jaeger waits for its build here, before pytest-timeout's clock
    for the test starts (this wrapper is outside pytest-timeout's): the wait is the build's,
    not the test's. The ``jaeger_binary`` fixture then reports how the build ended."""
    build = item.config.stash.get(_JAEGER_BUILD, None)
    if build is not None and build.running() and _needs_jaeger(item):
        reporter = item.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"waiting for Jaeger's build (log: {build.log_file}) ...")
        build.wait()
    yield


def _needs_jaeger(item: pytest.Item) -> bool:
    names = getattr(item, "fixturenames", ())
    return needs_jaeger(names, {mark.name for mark in item.iter_markers()})


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(_JAEGER_BUILD, None)
    if build is not None:
        build.stop()


@pytest.fixture(scope="session")
def jaeger_binary(request: pytest.FixtureRequest) -> None:
    """Jaeger is installed: the background build has ended (or, when none was started, a build
    has run now). If the build failed the tests fail with its message rather than skip."""
    build = request.config.stash.get(_JAEGER_BUILD, None)
    reason = (build or BackgroundBuild.for_settings(Settings.from_env())).wait()
    if reason is not None:
        pytest.fail(f"Jaeger is needed and could not be installed: {reason}")


@pytest.fixture(scope="session")
def jaeger(tmp_path_factory: pytest.TempPathFactory, jaeger_binary: None) -> Iterator[BackendInfo]:
    """A real Jaeger v2 (OTLP/HTTP in, UI and HTTP API out) on loopback, shared by the session.

    Its binary comes from the ``jaeger_binary`` fixture (built with Go from the Go module proxy
    when missing: a few minutes the first time, cached in .cache/).
    """
    from hosting.servers.jaeger import LocalJaeger

    settings = Settings.from_env()
    home = tmp_path_factory.mktemp("jaeger-home")
    backend = LocalJaeger(replace(settings, home=home), otlp_port=0, ui_port=0)
    info = backend.start()
    try:
        yield info
    finally:
        backend.stop()
