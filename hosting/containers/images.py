"""`make images`: the mesh's container images, built on this machine with no registry.

No registry is reachable here, so the first image is a Debian root filesystem made with
``debootstrap`` from Debian's own package mirror and ``docker import``-ed; every other image is
built from it with ``docker build --network host`` (the engine runs without a bridge network):

=====================  ==========================================================================
``mesh/base:bookworm``  debootstrap minbase + python3, python3-venv, ca-certificates
``mesh/jre:bookworm``   + openjdk-17-jre-headless (Debian's package)
``mesh/python:local``   venv of the lock minus dev tools and Spark, and the project's code:
                        detector runtime, notifier, tools, the `mesh` CLI
``mesh/spark:local``    the Python image's venv and code + the Spark stack, on the JRE, with the
                        Kafka/Avro connector and Delta Lake jars baked in (nothing downloads at
                        job start)
``mesh/kafka:local``    the JRE + the broker jars from the jar cache (KRaft, one node)
``mesh/influxdb:local`` Debian's influxdb package
``mesh/jaeger:local``   the Jaeger v2 binary ``make jaeger`` built, and the mesh's trace viewer
=====================  ==========================================================================

Each build gets a context of exactly what its image needs (``.cache/images/<name>/``) except the
Python image, whose context is the checkout filtered by ``.dockerignore``. pip inside a build
trusts this machine's CA bundle (a proxy may re-sign PyPI); it is used in a build stage only and
is not in any image. Existing images are kept: ``--rebuild`` builds them again (the engine's layer
cache makes an unchanged one quick).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hosting.containers.broker_image import cluster_settings, server_template
from hosting.containers.engine import EngineUnavailable, connect
from hosting.containers.requirements_split import services_requirements, spark_requirements
from hosting.servers.broker import LOG4J_CONFIG
from hosting.servers.jaeger import VIEWER, render_config
from hosting.servers.jaeger_install import installed as jaeger_binary
from shared.errors import MeshError
from shared.file_digest import files_digest
from shared.jar_cache import BUNDLES, JarCacheError, fetch
from shared.settings import PROJECT_ROOT, Settings

DOCKERFILES = PROJECT_ROOT / "infra" / "images"
LOCK = PROJECT_ROOT / "requirements.lock"
BASE = "mesh/base:bookworm"
JRE = "mesh/jre:bookworm"
#: The tag of the images built from this checkout (the compose file's default too).
TAG = os.environ.get("MESH_IMAGE_TAG", "local")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
#: The CA bundle pip inside a build trusts (a TLS-intercepting proxy's root is in it here).
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
#: What the Python image's build adds to the checkout as its context (see python.Dockerfile).
PYTHON_BUILD = PROJECT_ROOT / ".cache" / "images" / "python-build"
#: The compiled Avro decoder's crate, and where its wheels for the image are kept per version.
DECODER_SOURCES = PROJECT_ROOT / "native" / "avro_decoder"
DECODER_WHEELS = PROJECT_ROOT / ".cache" / "images" / "decoder-wheels"

Say = Callable[[str], None]


class ImageBuildError(MeshError):
    """An image could not be built; the message says which and why."""


def compiled_decoder_wheel(folder: Path, say: Say) -> None:
    """The compiled Avro decoder (native/avro_decoder) as a wheel for the Python image, built on
    this machine (the image is Debian bookworm's CPython 3.11, as the host's venv: the wheel
    fits); without cargo the folder stays empty and the image's services decode with fastavro.

    The wheel is built once per version of its sources and kept: a wheel built again differs in
    its zip timestamps, which would cost every ``--rebuild`` the image's whole pip layer."""
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("cargo") is None:
        say("cargo not found: the Python image decodes Avro with fastavro (install Rust to build "
            "the compiled decoder into it)")  # fmt: skip
        return
    kept = DECODER_WHEELS / files_digest(DECODER_SOURCES, _decoder_sources())[:16]
    if not any(kept.glob("*.whl")):
        staging = DECODER_WHEELS / f".building-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        build = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
             str(staging), str(DECODER_SOURCES)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if build.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            reason = (build.stderr.strip().splitlines() or ["no output"])[-1]
            raise ImageBuildError(f"building the compiled Avro decoder's wheel failed: {reason}")
        shutil.rmtree(kept, ignore_errors=True)
        staging.rename(kept)
    for wheel in kept.glob("*.whl"):
        shutil.copy2(wheel, folder / wheel.name)


def _decoder_sources() -> list[Path]:
    """The crate's build inputs: manifests, lock file and Rust sources."""
    root = DECODER_SOURCES
    return sorted([*root.glob("*.toml"), root / "Cargo.lock", *root.glob("src/**/*.rs")])


def image(name: str, tag: str = TAG) -> str:
    return f"mesh/{name}:{tag}"


@dataclass(frozen=True)
class Built:
    tag: str
    seconds: float
    size_bytes: int
    reused: bool


class ImageBuilder:
    """Builds the images in order; each one only if missing (or always, with ``rebuild``)."""

    def __init__(
        self,
        settings: Settings,
        *,
        rebuild: bool = False,
        say: Say = print,
        tag: str = TAG,
        no_cache: bool = False,
    ) -> None:
        """``tag`` names this build's images (the bench builds its own); ``no_cache`` builds
        every layer again (what a first build costs, base and JRE aside)."""
        self.settings, self.rebuild, self.say = settings, rebuild, say
        self.tag, self.no_cache = tag, no_cache
        self.work = settings.cache / "images"
        self.client = connect()
        self.log = self.work / "build.log"

    def image(self, name: str) -> str:
        return image(name, self.tag)

    def build_all(self, only: tuple[str, ...] = ()) -> list[Built]:
        """Every image in order, or those of ``only`` (short names: "python", "spark", ...),
        which then need the images they build on to exist."""
        self.work.mkdir(parents=True, exist_ok=True)
        self.log.write_text("")
        steps: list[tuple[str, Callable[[], None]]] = [
            (BASE, self._base),
            (JRE, lambda: self._docker_build(JRE, self._context("jre"), "jre.Dockerfile")),
            (self.image("python"), self._python),
            (self.image("spark"), self._spark),
            (self.image("kafka"), self._kafka),
            (self.image("influxdb"), lambda: self._docker_build(
                self.image("influxdb"), self._context("influxdb"), "influxdb.Dockerfile")),
            (self.image("jaeger"), self._jaeger),
        ]  # fmt: skip
        wanted = [(tag, build) for tag, build in steps
                  if not only or tag.split("/")[1].split(":")[0] in only]  # fmt: skip
        return [self._step(tag, build) for tag, build in wanted]

    def _step(self, tag: str, build: Callable[[], None]) -> Built:
        # The images built on top of a rebuilt one must be rebuilt too; the layer cache keeps
        # that cheap, so --rebuild simply builds everything but the debootstrap base.
        present = self._size(tag)
        if present is not None and (not self.rebuild or tag == BASE):
            self.say(f"{tag}: present ({present / 1e6:.0f} MB)")
            return Built(tag, 0.0, present, True)
        self.say(f"{tag}: building ...")
        started = time.monotonic()
        build()
        seconds = time.monotonic() - started
        size = self._size(tag) or 0
        self.say(f"{tag}: built in {seconds:.0f} s ({size / 1e6:.0f} MB)")
        return Built(tag, seconds, size, False)

    def _size(self, tag: str) -> int | None:
        from docker.errors import ImageNotFound

        try:
            return int(self.client.images.get(tag).attrs["Size"])
        except ImageNotFound:
            return None

    # the images ------------------------------------------------------------------------------
    def _base(self) -> None:
        """Debian bookworm from Debian's mirror: the one image that needs root and debootstrap."""
        if os.geteuid() != 0:
            raise ImageBuildError(
                f"{BASE} is made with debootstrap, which needs root: run `make images` as root "
                "once (the other images build on it)"
            )
        if shutil.which("debootstrap") is None:
            raise ImageBuildError(
                f"{BASE} needs debootstrap: install it (as root: apt-get install debootstrap)"
            )
        from docker.errors import APIError

        rootfs = self.work / "rootfs"
        archive = self.work / "rootfs.tar"
        shutil.rmtree(rootfs, ignore_errors=True)
        try:
            self._run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
                       "bookworm", str(rootfs), DEBIAN_MIRROR], "debootstrap")  # fmt: skip
            self._run(["tar", "-C", str(rootfs), "-cf", str(archive), "."], "tar")
            repository, tag = BASE.split(":")
            try:
                self.client.api.import_image_from_file(
                    str(archive), repository=repository, tag=tag,
                    changes=["ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]'],
                )  # fmt: skip
            except APIError as error:
                raise ImageBuildError(f"importing {BASE} failed: {error.explanation}") from None
        finally:
            shutil.rmtree(rootfs, ignore_errors=True)
            archive.unlink(missing_ok=True)

    def _python(self) -> None:
        # Inside the checkout, whatever MESH_CACHE says: the context is the checkout.
        build = PYTHON_BUILD
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir(parents=True)
        (build / "requirements.txt").write_text("\n".join(services_requirements(LOCK)) + "\n")
        compiled_decoder_wheel(build / "wheels", self.say)
        self._docker_build(self.image("python"), PROJECT_ROOT, "python.Dockerfile",
                           {"BASE": BASE},
                           ca_into=build)  # fmt: skip

    def _spark(self) -> None:
        context = self._context("spark")
        (context / "requirements.txt").write_text("\n".join(spark_requirements(LOCK)) + "\n")
        self._copy_jars("spark", context / "jars")
        self._copy_jars("delta", context / "delta-jars")  # the history and backtests
        args = {"PYTHON_IMAGE": self.image("python"), "BASE": BASE, "JRE": JRE}
        self._docker_build(self.image("spark"), context, "spark.Dockerfile", args)

    def _kafka(self) -> None:
        context = self._context("kafka")
        self._copy_jars("kafka", context / "libs")
        shutil.copy(LOG4J_CONFIG, context / "log4j2.properties")
        shutil.copy(DOCKERFILES / "kafka-entrypoint.sh", context / "entrypoint.sh")
        # The same broker settings as the local mesh's; the entrypoint fills in each node's.
        (context / "server.properties.in").write_text(server_template())
        (context / "cluster.properties").write_text(cluster_settings())
        self._docker_build(self.image("kafka"), context, "kafka.Dockerfile", {"JRE": JRE})

    def _jaeger(self) -> None:
        binary = jaeger_binary(self.settings)
        if binary is None:
            raise ImageBuildError(
                f"{self.image('jaeger')} needs the Jaeger binary: run `make jaeger` first"
            )
        context = self._context("jaeger")
        shutil.copy(binary, context / "jaeger")
        shutil.copytree(VIEWER, context / "ui")
        # Host and ports are the collector's own ${env:...} references, set by compose.
        config = render_config(
            "${env:MESH_OTLP_PORT}", "${env:MESH_TRACE_UI_PORT}",
            ui_assets=Path("/opt/jaeger/ui"), host="${env:MESH_TRACE_HOST}",
        )  # fmt: skip
        (context / "config.yaml").write_text(config)
        self._docker_build(self.image("jaeger"), context, "jaeger.Dockerfile", {"BASE": BASE})

    # helpers ---------------------------------------------------------------------------------
    def _context(self, name: str) -> Path:
        """A fresh build context under ``.cache/images/<name>``."""
        folder = self.work / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def _copy_jars(self, bundle: str, into: Path) -> None:
        try:
            source = fetch(BUNDLES[bundle], self.settings)
        except JarCacheError as error:
            raise ImageBuildError(str(error)) from None
        shutil.copytree(source, into)

    def _docker_build(
        self,
        tag: str,
        context: Path,
        dockerfile: str,
        args: dict[str, str] | None = None,
        ca_into: Path | None = None,
    ) -> None:
        from docker.errors import APIError

        args = {"JRE": JRE, **(args or {})}
        if not HOST_CA.is_file():
            raise ImageBuildError(
                f"no CA bundle at {HOST_CA} for pip inside the build: install ca-certificates"
            )
        shutil.copy(HOST_CA, (ca_into or context) / "build-ca.crt")
        try:
            stream = self.client.api.build(
                path=str(context), dockerfile=str(DOCKERFILES / dockerfile), tag=tag,
                buildargs=args, network_mode="host", rm=True, forcerm=True, decode=True,
                nocache=self.no_cache,
            )  # fmt: skip
            with self.log.open("a") as log:
                log.write(f"\n=== {tag}\n")
                for chunk in stream:
                    log.write(chunk.get("stream", "") or json.dumps(chunk) + "\n")
                    if "error" in chunk:
                        raise ImageBuildError(
                            f"building {tag} failed: {chunk['error'].strip()[:300]} "
                            f"(the whole output is in {self.log})"
                        )
        except APIError as error:
            raise ImageBuildError(f"building {tag} failed: {error.explanation}") from None

    def _run(self, command: list[str], what: str) -> None:
        with self.log.open("a") as log:
            log.write(f"\n=== {' '.join(command)}\n")
            log.flush()
            result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
        if result.returncode != 0:
            raise ImageBuildError(f"{what} failed (exit {result.returncode}): see {self.log}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make images", description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild", action="store_true", help="build present images again")
    options = parser.parse_args(argv)
    try:
        built = ImageBuilder(Settings.from_env(), rebuild=options.rebuild).build_all()
    except (EngineUnavailable, ImageBuildError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    total = sum(b.seconds for b in built)
    print(f"images ready ({total:.0f} s building): " + ", ".join(b.tag for b in built))
    return 0


if __name__ == "__main__":
    sys.exit(main())
