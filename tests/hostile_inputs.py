"""The hostile-input catalogue of issues 12 and 26: one entry per input class, written to disk.

Shared by ``tests/integration/test_hostile_input.py`` (each is submitted through the CLI and must
exit 2 with its one message, creating nothing) and ``benchmarks/reliability.py`` (the figures of
docs/reliability.md). Each :class:`Hostile` knows the CLI arguments that submit it (without
``-n``, which the caller adds unless ``namespaced`` is False) and a piece of the message it must
produce. Issue 26 (finding 9) added numbers of any length, an overhead factor of 1e308, memory 0,
0 and 2^31 executors, an empty primary resource, ``-n ''``, ``--ttl 99999999999d`` and FIFOs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parents[1]
PI = ROOT / "examples" / "spark-pi.yaml"
JAR = "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar"


@dataclass(frozen=True)
class Hostile:
    """One hostile input: how it is submitted and what the refusal must say."""

    name: str
    args: tuple[str, ...]
    expect: str
    one_problem: bool = True  # False where the command-line parser answers (its own format)
    namespaced: bool = True  # False: the case sets -n itself (the caller must not add one)


def laughs(levels: int = 9, width: int = 9, indent: str = "") -> str:
    lines = [f"{indent}l0: &l0 [" + ",".join(["lol"] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"{indent}l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def _pi(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(PI.read_text())
    doc["spec"].update(changes)
    return doc


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def build(tmp: Path) -> list[Hostile]:
    """Write every hostile input under ``tmp`` and return the catalogue."""
    tmp.mkdir(parents=True, exist_ok=True)
    cases: list[Hostile] = []

    def spec(name: str, content: str | bytes, expect: str) -> None:
        path = tmp / f"{name}.yaml"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        cases.append(Hostile(f"-f {name}", ("submit", "-f", str(path)), expect))

    pi = PI.read_text()
    spec("empty", "", "is empty")
    spec("comment-only", "# just a comment\n", "is empty")
    spec("list", "- a\n- b\n", "is a list, expected a mapping")
    spec("scalar", "spark-pi\n", "is a single value (str), expected a mapping")
    spec("non-utf8", pi.encode() + b"\n# \xff\xfe\n", "is not UTF-8 text")
    spec("multi-document", pi + "---\n" + pi, "has 2 YAML documents; expected one")
    spec("deep-nesting", "a: " + "[" * 20000 + "]" * 20000 + "\n", "nested more than 64 levels")
    spec("python-tag", pi + "x: !!python/object/apply:os.system [id]\n", "tag '!!python/object")
    spec("local-tag", pi + "x: !vault secret/db\n", "tag '!vault' is not allowed")
    spec(
        "duplicate-image",
        pi.replace("\n  image: ", "\n  image: a/b:1\n  image: ", 1),
        "duplicate key 'image'",
    )
    bomb = _pi()
    bomb_text = _dump(bomb) + "bomb:\n" + laughs(indent="  ")
    spec("billion-laughs", bomb_text, "aliases expand too much")
    spec("recursive-alias", pi + "loop: &loop [*loop]\n", "recursive alias")
    spec("syntax", pi + "zzz: [unclosed\n", "not valid YAML")
    spec("control-char", pi + "x: \x07\n", "contains a character YAML does not allow")
    spec("ten-megabytes", pi + "# " + "x" * (10 * 1024 * 1024) + "\n", "is too large (10.0 MiB")
    spec("image-with-space", _dump(_pi(image="apache/spark 4.0.1")), "contains whitespace")
    spec("image-uppercase", _dump(_pi(image="Apache/Spark:4")), "not a valid image reference")
    spec("absurd-memory", _dump(_pi(driver={"memory": "10000000000g"})), "the limit is 16t")
    spec("absurd-cores", _dump(_pi(driver={"cores": 100000})), "more than any node has")
    conf = {f"spark.custom.k{i:06d}": "v" * 8 for i in range(45_000)}
    spec("conf-over-1MiB", _dump(_pi(sparkConf=conf)), "a ConfigMap holds at most 1 MiB")
    many = {f"spark.custom.k{i:06d}": "v" for i in range(300_000)}
    spec("300k-conf-keys", _dump(_pi(sparkConf=many)), "is too large")
    no_main = _pi()
    for key in ("mainClass", "jars"):
        no_main["spec"].pop(key)
    spec("no-primary-resource", _dump(no_main), "nothing to run")
    big = "9" * 5000
    spec(
        "5000-digit-integer",
        _dump(_pi(driver={"cores": 1})).replace("cores: 1", f"cores: {big}"),
        "a number with 5000 digits",
    )
    conf = _pi()["spec"]["sparkConf"]
    spec(
        "5000-digit-executors",
        _dump(_pi(sparkConf={**conf, "spark.executor.instances": big})),
        "above the limit of 150000 executors",
    )
    spec(
        "overhead-factor-1e308",
        _dump(_pi(sparkConf={**conf, "spark.kubernetes.memoryOverheadFactor": "1e308"})),
        "makes the driver and executor memory plus overhead more than any node has",
    )
    spec("memory-0", _dump(_pi(driver={"memory": "0"})), "memory '0' is less than 1 MiB")
    spec(
        "memory-overhead-0",
        _dump(_pi(executor={"memoryOverhead": "0m"})),
        "memory '0m' is less than 1 MiB",
    )
    spec(
        "2^31-executors",
        _dump(_pi(sparkConf={**conf, "spark.executor.instances": str(2**31)})),
        "above the limit of 150000 executors",
    )
    spec(
        "0-executors",
        _dump(_pi(sparkConf={**conf, "spark.executor.instances": "0"})),
        "Number of executors must be a positive number",
    )
    spec("empty-jars", _dump(_pi(jars="")), "spec.jars: is empty")
    fifo = tmp / "fifo.yaml"
    if not fifo.exists():
        os.mkfifo(fifo)
    cases.append(Hostile("-f fifo", ("submit", "-f", str(fifo)), "is a FIFO (named pipe)"))
    cases.append(Hostile("-f directory", ("submit", "-f", str(tmp)), "is a directory", False))
    missing = ("submit", "-f", str(tmp / "nope.yaml"))
    cases.append(Hostile("-f missing", missing, "does not exist", False))

    example_values = str(ROOT / "examples" / "template" / "values.env")

    def template(name: str, content: str | bytes, expect: str, *extra: str) -> None:
        extra = extra or ("--values", example_values)
        folder = tmp / f"template-{name}"
        folder.mkdir(exist_ok=True)
        path = folder / "app.yaml"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        cases.append(
            Hostile(f"--template {name}", ("submit", "--template", str(folder), *extra), expect)
        )

    driver = (ROOT / "examples" / "template").glob("*.yaml")
    base = "\n---\n".join(p.read_text() for p in sorted(driver))
    template(
        "duplicate-key",
        base + "\n---\napiVersion: v1\nkind: ConfigMap\nkind: ConfigMap\n",
        "duplicate key 'kind'",
    )
    template("billion-laughs", base + "\n---\n" + laughs(), "aliases expand too much")
    template("python-tag", base + "\n---\nx: !!python/name:os.system ''\n", "tag '!!python/name")
    template("non-utf8", base.encode() + b"\n# \xff\n", "is not UTF-8 text")
    values = tmp / "values.env"
    values.write_bytes(b"A=\xff\n")
    template("values-non-utf8", base, "is not UTF-8 text", "--values", str(values))

    def flags(name: str, expect: str, *argv: str) -> None:
        cases.append(Hostile(f"flags {name}", ("submit", *argv), expect))

    image = ("--conf", "spark.kubernetes.container.image=apache/spark:4.0.1")
    flags("no-primary-resource", "no primary resource", *image, "--class", "org.x.Main")
    flags(
        "image-with-space",
        "contains whitespace",
        "--conf",
        "spark.kubernetes.container.image=a b",
        "--class",
        "org.x.Main",
        JAR,
    )
    flags(
        "absurd-memory",
        "the limit is 16t",
        *image,
        "--driver-memory",
        "10000000000g",
        "--class",
        "org.x.Main",
        JAR,
    )
    main = ("--class", "org.x.Main", JAR)
    flags("5000-digit-executors", "above the limit", *image, "--num-executors", big, *main)
    flags(
        "overhead-factor-1e308",
        "more than any node has",
        *image,
        *("--conf", "spark.kubernetes.memoryOverheadFactor=1e308"),
        *main,
    )
    flags("memory-0", "less than 1 MiB", *image, "--driver-memory", "0", *main)
    flags("5000-digit-memory", "more than any node has", *image, "--executor-memory", big, *main)
    flags("2^31-executors", "150000 executors", *image, "--num-executors", str(2**31), *main)
    flags("0-executors", "positive number", *image, "--num-executors", "0", *main)
    flags("empty-primary-resource", "is empty", *image, "--class", "org.x.Main", "")
    flags("ttl-overflow", "is longer than 36500d", "-f", str(PI), "--ttl", "99999999999d")
    flags("properties-file-fifo", "is a FIFO", "--properties-file", str(fifo), *image, *main)
    cases.append(
        Hostile("flags -n ''", ("submit", "-f", str(PI), "-n", ""), "is empty", True, False)
    )
    writers: dict[str, Callable[[Path], object]] = {
        "binary": lambda p: p.write_bytes(bytes(range(256)) * 4),
        "list": lambda p: p.write_text("- kind: Pod\n"),
        "bomb": lambda p: p.write_text(
            "apiVersion: v1\nkind: Pod\nmetadata:\n" + laughs(indent="  ")
        ),
        "empty": lambda p: p.write_text(""),
    }
    expects = {
        "binary": "is not UTF-8 text",
        "list": "is a list",
        "bomb": "aliases expand",
        "empty": "is empty",
    }
    for name, write in writers.items():
        path = tmp / f"pod-template-{name}.yaml"
        write(path)
        flags(
            f"podTemplateFile-{name}",
            expects[name],
            *image,
            "--conf",
            f"spark.kubernetes.driver.podTemplateFile={path}",
            "--class",
            "org.x.Main",
            JAR,
        )
    flags(
        "podTemplateFile-fifo",
        "is a FIFO",
        *image,
        *("--conf", f"spark.kubernetes.driver.podTemplateFile={fifo}"),
        *main,
    )
    return cases
