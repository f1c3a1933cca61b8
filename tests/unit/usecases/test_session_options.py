"""A session's options, its server's spark-submit arguments and its token Secret (pure)."""

from __future__ import annotations

import pytest

from sparkplane.usecases.session import (
    CONNECT_CLASS,
    TOKEN_ENV,
    SessionOptions,
    session_argv,
    token_secret,
)
from sparkplane.usecases.sources import read_source
from sparkplane.vocab import IDLE_TIMEOUT_KEY, SESSION_LABEL, SESSION_OWNER_KEY


def test_argv_runs_the_connect_server_with_the_token_from_the_secret() -> None:
    opts = SessionOptions(executors=2, idle_timeout=600, conf={"spark.sql.shuffle.partitions": "4"})
    argv = session_argv(opts, "nb", "nb-connect-token", "alice")
    app = read_source(argv=argv, namespace="ns").app
    assert app is not None
    assert app.spec.main_class == CONNECT_CLASS
    assert "spark-connect_2.13-4.0.1.jar" in (app.spec.jars or "")
    conf = app.spec.spark_conf
    assert conf[f"spark.kubernetes.driver.secretKeyRef.{TOKEN_ENV}"] == "nb-connect-token:token"
    assert conf[f"spark.kubernetes.driver.label.{SESSION_LABEL}"] == "nb"
    assert conf[f"spark.kubernetes.driver.annotation.{SESSION_OWNER_KEY}"] == "alice"
    assert conf[f"spark.kubernetes.driver.annotation.{IDLE_TIMEOUT_KEY}"] == "600"
    assert conf["spark.sql.shuffle.partitions"] == "4"
    assert not any("token" in v and "connect-token" not in v for v in conf.values())


def test_the_token_is_never_in_the_arguments() -> None:
    secret = token_secret("nb", "ns", "s3cr3t-value", "alice")
    assert secret["stringData"] == {"token": "s3cr3t-value"}
    assert secret["metadata"]["labels"] == {SESSION_LABEL: "nb"}
    assert "s3cr3t-value" not in " ".join(
        session_argv(SessionOptions(), "nb", "nb-connect-token", "a")
    )


@pytest.mark.parametrize(
    ("opts", "field"),
    [
        (SessionOptions(name="Not_A_Label"), "name"),
        (SessionOptions(executors=-1), "executors"),
        (SessionOptions(idle_timeout=-5), "idle_timeout"),
        (SessionOptions(max_lifetime=-1), "max_lifetime"),
    ],
)
def test_bad_options_name_the_field(opts: SessionOptions, field: str) -> None:
    assert [p.path for p in opts.problems()] == [field]
