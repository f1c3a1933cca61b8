"""spark-submit's rule on sparkplane's command line: the primary resource ends the options."""

from __future__ import annotations

from sparkplane.cli.argv import prepare, split

JAR = "local:///job.jar"


def test_everything_after_the_primary_resource_belongs_to_the_app():
    args = ["-n", "team", "--class", "A", JAR, "-n", "5", "--limit", "3", "-h", "--wait"]
    assert split(args) == [
        "-n",
        "team",
        "--",
        "--class",
        "A",
        JAR,
        "-n",
        "5",
        "--limit",
        "3",
        "-h",
        "--wait",
    ]


def test_values_starting_with_a_dash_are_not_read_as_options():
    args = ["--driver-java-options", "-Dlog4j.configuration=file:/x -Dy=1", JAR]
    assert split(args) == ["--", *args]


def test_own_options_and_flags_stay_before_the_separator():
    args = ["--dry-run", "-o", "json", "--verbose", "--conf=spark.x=1", "--wait", JAR, "1"]
    assert split(args) == [
        "--dry-run",
        "-o",
        "json",
        "--wait",
        "--",
        "--verbose",
        "--conf=spark.x=1",
        JAR,
        "1",
    ]


def test_only_submit_and_render_are_split():
    assert prepare(["get", "apps", "-n", "x"]) == ["get", "apps", "-n", "x"]
    assert prepare(["submit", "-f", "a.yaml"]) == ["submit", "-f", "a.yaml"]
    assert prepare(["render", JAR, "-h"]) == ["render", "--", JAR, "-h"]
