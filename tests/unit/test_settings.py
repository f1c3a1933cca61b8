"""Settings are merged in one place: defaults, then the environment, then arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkplane.settings import Settings


def test_defaults_then_environment_then_arguments(tmp_path: Path) -> None:
    assert Settings.load({}) == Settings()
    assert Settings().archive_dir == Path.home() / ".cache" / "sparkplane" / "log-archive"
    env = {
        "SPARKPLANE_LOG_ARCHIVE": " kube ",
        "SPARKPLANE_EVENT_LOG_ROOT": "/srv/events",
        "SPARKPLANE_CACHE_DIR": str(tmp_path),
        "SPARKPLANE_STAGING_TOKEN": "secret",
        "PYSPARK_PYTHON": "./env/bin/python",
    }
    loaded = Settings.load(env)
    assert (loaded.pyspark_python, loaded.pyspark_driver_python) == ("./env/bin/python", "")
    assert (loaded.log_archive, loaded.event_log_root) == ("kube", "/srv/events")
    assert loaded.archive_dir == tmp_path / "log-archive" and loaded.staging_token == "secret"
    argued = Settings.load(env, log_archive="off", event_log_root=None)
    assert argued.log_archive == "off" and argued.event_log_root == "/srv/events"


def test_an_unknown_setting_is_a_callers_bug() -> None:
    with pytest.raises(TypeError, match="unknown settings"):
        Settings.load({}, log_archives="off")


def test_the_environment_is_read_only_by_the_settings_module() -> None:
    """No module deeper than the entry points (the CLI's commands) reads sparkplane's
    variables itself."""
    root = Path(__file__).parents[2] / "src" / "sparkplane"
    readers = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "SPARKPLANE_" in p.read_text()
        and "os.environ" in p.read_text()
        and p.parent.name != "cli"
    )
    assert readers == ["settings.py"], readers


def test_the_submitters_pyspark_python_reaches_a_python_driver() -> None:
    """``PYSPARK_PYTHON`` read at the edge (Settings) and passed down to the render, as
    spark-submit's DriverCommandFeatureStep reads it when spark.pyspark.python is unset."""
    from sparkplane.api.client import SparkPlane

    sp = SparkPlane(None, "default", settings=Settings.load({"PYSPARK_PYTHON": "./env/bin/py"}))
    argv = ["--name", "py", "--image", "apache/spark:4.0.1", "local:///opt/job.py"]
    [pod] = [o for o in sp.render(sp.source(argv=argv)) if o["kind"] == "Pod"]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == "./env/bin/py"
