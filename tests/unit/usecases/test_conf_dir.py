"""The submitter's SPARK_CONF_DIR, shipped as spark-submit ships it (reference §3.6)."""

from __future__ import annotations

from pathlib import Path

from sparkplane.settings import Settings
from sparkplane.spec import from_submit_args
from sparkplane.usecases.conf_dir import max_size, read_conf_dir
from sparkplane.usecases.create import SubmitOptions, render_native
from sparkplane.usecases.sources import read_source, with_conf_dir

ARGV = [
    "--class", "org.apache.spark.examples.SparkPi",
    "--conf", "spark.kubernetes.container.image=apache/spark:4.0.1",
    "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar",
]  # fmt: skip


def _dir(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "log4j2.properties").write_text("rootLogger.level = info\n")
    (conf / "hive-site.xml").write_text("<configuration/>\n")
    (conf / "spark-defaults.conf").write_text("spark.x 1\n")  # resolved separately
    (conf / "log4j2.properties.template").write_text("x\n")
    (conf / "spark-env.sh").write_text("export A=1\n")  # an ordinary file for Spark
    (conf / "deps.jar").write_bytes(b"PK")
    (conf / "latin1.txt").write_bytes(b"caf\xe9")
    (conf / "sub").mkdir()
    return conf


def test_the_files_spark_submit_ships(tmp_path: Path) -> None:
    found = read_conf_dir(_dir(tmp_path))
    assert [name for name, _ in found.files] == [
        "hive-site.xml",
        "log4j2.properties",
        "spark-env.sh",
    ]
    assert dict(found.files)["log4j2.properties"] == "rootLogger.level = info\n"
    assert len(found.skipped) == 1 and "latin1.txt: not UTF-8" in found.skipped[0]


def test_smallest_first_below_the_config_map_limit(tmp_path: Path) -> None:
    conf = tmp_path / "c"
    conf.mkdir()
    (conf / "a.xml").write_text("x" * 40)
    (conf / "b.xml").write_text("y" * 10)
    found = read_conf_dir(conf, limit=60)  # b (5+10) fits, then a (5+40) would reach 60
    assert [n for n, _ in found.files] == ["b.xml"]
    assert "exceed spark.kubernetes.configMap.maxSize" in found.skipped[0]
    assert max_size({"spark.kubernetes.configMap.maxSize": "60"}) == 60
    assert read_conf_dir("").files == () and read_conf_dir(tmp_path / "missing").files == ()


def test_settings_find_the_dir_as_spark_submit_does(tmp_path: Path) -> None:
    assert Settings.load({"SPARK_CONF_DIR": "/c", "SPARK_HOME": "/h"}).spark_conf_dir == "/c"
    assert Settings.load({"SPARK_HOME": "/h"}).spark_conf_dir == "/h/conf"
    assert Settings.load({}).spark_conf_dir == ""


def test_the_files_reach_the_driver_conf_map_beside_spark_properties(tmp_path: Path) -> None:
    source = with_conf_dir(read_source(argv=ARGV), _dir(tmp_path))
    assert [w.path for w in source.warnings] == ["SPARK_CONF_DIR"]
    app = source.app
    assert app is not None
    rendered = render_native(app, None, SubmitOptions(conf_files=source.conf_files))
    config_map = next(r for r in rendered.resources if r["kind"] == "ConfigMap")
    assert config_map["data"]["log4j2.properties"] == "rootLogger.level = info\n"
    assert "spark.properties" in config_map["data"]
    volume = next(
        v for v in rendered.driver_pod["spec"]["volumes"] if v["name"] == "spark-conf-volume-driver"
    )
    assert [i["key"] for i in volume["configMap"]["items"]] == [
        "hive-site.xml",
        "log4j2.properties",
        "spark-env.sh",
        "spark.properties",
    ]
    assert from_submit_args(ARGV).spec.spark_conf == app.spec.spark_conf
