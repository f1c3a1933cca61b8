"""Hostile command-line input of issue 26, finding 9, through the real entry point with no
cluster (``render`` is offline): exit 2, one message naming the option, no traceback, no hang."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sparkplane.cli.main import main
from sparkplane.cli.options import namespace_option
from sparkplane.errors import ValidationError

ROOT = Path(__file__).parents[3]
PI = str(ROOT / "examples" / "spark-pi.yaml")
JAR = "local:///opt/spark/examples/jars/spark-examples.jar"
IMAGE = ("--conf", "spark.kubernetes.container.image=apache/spark:4.0.1")


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    """stderr of ``sparkplane ARGS``, which must exit 2 with one problem."""
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")  # offline: nothing is contacted
    monkeypatch.delenv("SPARKPLANE_KUBECONFIG", raising=False)
    monkeypatch.delenv("SPARKPLANE_NAMESPACE", raising=False)
    with pytest.raises(SystemExit) as info:
        main(list(args))
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert "Traceback" not in err and ": 1 problem; nothing was created" in err
    return err


def test_namespace_option() -> None:
    assert namespace_option(None) is None
    assert namespace_option("team-a") == "team-a"
    for bad in ("", " ", "Team", "a_b", "x" * 64):
        with pytest.raises(ValidationError) as info:
            namespace_option(bad)
        assert info.value.problems[0].path == "--namespace"


def test_empty_namespace_does_not_mean_default(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert "--namespace: is empty" in run(capsys, monkeypatch, "render", "-f", PI, "-n", "")


def test_a_fifo_properties_file_is_refused_at_once(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fifo = tmp_path / "spark-defaults.conf"
    os.mkfifo(fifo)
    start = time.monotonic()
    err = run(
        capsys, monkeypatch, "render", "--properties-file", str(fifo), *IMAGE, "--class", "X", JAR
    )
    assert "is a FIFO (named pipe), not a regular file" in err
    assert time.monotonic() - start < 10


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--ttl", "99999999999d"), "--ttl: '99999999999d' is longer than 36500d"),
        (("--conf", "spark.executor.instances=" + "9" * 5000), "above the limit of 150000"),
        (("--conf", "spark.kubernetes.memoryOverheadFactor=1e308"), "more than any node has"),
        (("--driver-memory", "0"), "spark.driver.memory]: memory '0' is less than 1 MiB"),
        (("--num-executors", str(2**31)), "above the limit of 150000 executors"),
        (("--num-executors", "0"), "Number of executors must be a positive number"),
    ],
)
def test_hostile_flags(capsys, monkeypatch, args: tuple[str, ...], words: str) -> None:  # type: ignore[no-untyped-def]
    # --ttl only applies to a submission; the rest is refused by render the same way
    command = "submit" if args[0] == "--ttl" else "render"
    tail = ("-f", PI) if command == "submit" else (*IMAGE, "--class", "X", JAR)
    err = run(capsys, monkeypatch, command, *args, *tail)
    assert words in err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "9" * 5000])
def test_a_timeout_is_a_finite_number_of_seconds(capsys, monkeypatch, value: str) -> None:  # type: ignore[no-untyped-def]
    err = run(capsys, monkeypatch, "wait", "some-app", "--timeout", value)
    assert "--timeout: " in err and "is not a number of seconds" in err
