"""--master, --verbose and --properties-file of spark-submit (spec.submit_args)."""

from __future__ import annotations

import pytest

from sparkplane.errors import ValidationError
from sparkplane.spec.submit_args import k8s_master_url, parse_properties, split_submit_args


def test_master_verbose_and_properties_file_are_taken_out_before_the_resource():
    parsed = split_submit_args(
        [
            "--master",
            "k8s://h:6443",
            "-v",
            "--properties-file=p.conf",
            "--class",
            "A",
            "x.jar",
            "--master",
            "y",
        ]
    )
    assert parsed.master == "k8s://h:6443" and parsed.verbose
    assert parsed.properties_file == "p.conf"
    assert parsed.argv == ["--class", "A", "x.jar", "--master", "y"]  # app args untouched


@pytest.mark.parametrize("master", ["yarn", "local[*]", "spark://h:7077", "mesos://h:5050"])
def test_non_kubernetes_masters_are_refused(master):
    with pytest.raises(ValidationError) as info:
        split_submit_args(["--master", master, "x.jar"])
    assert "--master" in str(info.value) and "not a Kubernetes master" in str(info.value)


def test_master_url_defaults_to_https():
    assert k8s_master_url("k8s://h:6443") == "https://h:6443"
    assert k8s_master_url("k8s://http://h:8080") == "http://h:8080"


def test_properties_file_syntax():
    text = "# c\n! c\nspark.a=1\nspark.b : two\nspark.c   three words\nspark.d = \\\n  cont\n\n"
    assert parse_properties(text) == {
        "spark.a": "1",
        "spark.b": "two",
        "spark.c": "three words",
        "spark.d": "cont",
    }


def test_app_id_placeholder_in_label_values_is_accepted():
    from sparkplane.spec import from_submit_args, validate

    base = ["--image", "apache/spark:4.0.1", "--class", "A"]
    ok = from_submit_args(
        [*base, "--conf", "spark.kubernetes.driver.label.run={{APP_ID}}", "local:///x.jar"]
    )
    validate(ok)
    bad = from_submit_args(
        [*base, "--conf", "spark.kubernetes.driver.label.run=a b", "local:///x.jar"]
    )
    with pytest.raises(ValidationError, match="invalid label value"):
        validate(bad)


def test_kerberos_files_on_the_submitter_are_refused():
    from sparkplane.spec import from_submit_args, validate

    app = from_submit_args(
        ["--image", "apache/spark:4.0.1", "--class", "A", "--conf",
         "spark.kubernetes.kerberos.krb5.path=/etc/krb5.conf", "local:///x.jar"]
    )  # fmt: skip
    with pytest.raises(ValidationError, match=r"krb5\.configMapName"):
        validate(app)
