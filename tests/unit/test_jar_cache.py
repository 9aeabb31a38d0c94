import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from shared.jar_cache import (
    STAMP,
    Bundle,
    JarCacheError,
    _artifact,
    _pom_hash,
    is_fresh,
    require_tools,
    verify,
)
from shared.settings import Settings


@pytest.mark.parametrize(
    ("jar", "artifact"),
    [
        ("kafka-clients-3.9.0.jar", "kafka-clients"),
        ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "spark-sql-kafka-0-10_2.13"),
        ("zstd-jni-1.5.6-10.jar", "zstd-jni"),
        ("scala-library-2.13.15.jar", "scala-library"),
    ],
)
def test_artifact_name_drops_only_the_version(jar, artifact):
    assert _artifact(Path(jar)) == artifact


@pytest.fixture
def bundle_in_tmp(tmp_path):
    pom = tmp_path / "x.pom.xml"
    pom.write_text("<project/>")
    settings = replace(Settings.from_env({}), cache=tmp_path / "cache")
    bundle = Bundle("x", pom)
    folder = bundle.folder(settings)
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "good-1.0.jar", "w") as archive:
        archive.writestr("A.class", b"\xca\xfe\xba\xbe")
    (folder / STAMP).write_text(_pom_hash(pom))
    return bundle, settings


def test_a_complete_cache_is_fresh(bundle_in_tmp):
    bundle, settings = bundle_in_tmp
    assert is_fresh(bundle, settings)


def test_a_corrupt_jar_is_reported_with_the_fix(bundle_in_tmp):
    bundle, settings = bundle_in_tmp
    (bundle.folder(settings) / "broken-2.0.jar").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(JarCacheError, match=r"corrupt jar .*broken-2.0.jar.*make jars"):
        verify(bundle, settings)
    assert not is_fresh(bundle, settings)


def test_a_changed_pom_makes_the_cache_stale(bundle_in_tmp):
    bundle, settings = bundle_in_tmp
    bundle.pom.write_text("<project><!-- bumped --></project>")
    assert not is_fresh(bundle, settings)


def test_an_empty_cache_says_to_fetch(tmp_path):
    settings = replace(Settings.from_env({}), cache=tmp_path)
    with pytest.raises(JarCacheError, match="make jars"):
        verify(Bundle("kafka", tmp_path / "none.pom.xml"), settings)


def test_missing_maven_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JarCacheError, match="apt-get install"):
        require_tools()
