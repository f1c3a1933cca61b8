"""The documentation's commands as data, and how one is run against a cluster.

Every fenced block of ``README.md`` and ``docs/*.md`` and every ``try it`` command of the
README's table is a :class:`Block`. What a block is, and how it runs, is said in the Markdown
itself, by HTML comments on the lines right before the fence (in a table cell: right before the
backquoted command):

``<!-- norun: REASON -->``
    not run by the tests; the reason is required (a registry to push to, a benchmark's hour...).
``<!-- real-node -->``
    run by the real-node suite (``tests/realnode``): Spark must really run. Otherwise the KWOK
    suite (``tests/integration``) runs it.
``<!-- run-with: APP=spark-pi URL='$(shell command)' -->``
    placeholders the text names (whole words) replaced by these values before it runs
    (shell words: quote a value with spaces; in a shell block it may be a command substitution).
``<!-- exit: 2 -->``
    the exit code the block is documented to end with (default 0).
``<!-- serves: REGEX -->``
    its last command is a server that runs until stopped: it passes once its output matches
    REGEX while it still runs (then it is stopped); ending earlier fails.

Languages: ``bash``/``sh`` (the whole block is a ``bash -e -o pipefail`` script), ``console``
(only the ``$ `` lines are commands, ``\\``-continued), ``python`` (run with the venv's Python;
it must not raise). A block that is not a command says what it is (``text``, ``yaml``,
``mermaid``...); an untagged block, a runnable block without a way to run, or an unknown marker
is an error (:func:`problems`).

Each block runs in a fresh namespace made ready for Spark as ``dev-cluster up`` makes
``default`` (:func:`sparkplane_devcluster.cluster.ready_namespace`), with a kubeconfig whose
context names it (commands without ``-n`` land there); the docs' namespace ``spark-jobs`` stands
for it and is replaced by its name. Blocks run from a fresh copy of the repository's examples,
deploy, docs, benchmarks and tests, with the venv's ``sparkplane`` and the pinned ``helm`` on
``PATH``.
Every namespace, Helm release, ClusterRole and ClusterRoleBinding a block creates is deleted
after it, and every process it started is stopped.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("bash", "sh", "console")
RUNNABLE = (*SHELL, "python")
NOT_COMMANDS = ("text", "yaml", "json", "mermaid")
MARKERS = ("norun", "real-node", "run-with", "exit", "serves")
FOREIGN = ("generated", "end")  # docs/state-machine.md's generated sections: not markers
DOCS_NAMESPACE = "spark-jobs"
COPIED = ("examples", "deploy", "docs", "benchmarks", "tests", "README.md")

_FENCE = re.compile(r"^```(\S*)\s*$")
_MARKER = re.compile(r"<!--\s*([a-z-]+)\s*(?::\s*(.*?))?\s*-->")
_CELL_COMMAND = re.compile(r"((?:<!--.*?-->\s*)*)`((?:sparkplane|helm|kubectl) [^`]*)`")


@dataclass(frozen=True)
class Block:
    """One documented command block (or table command) and what its markers say."""

    path: Path
    line: int
    lang: str
    text: str
    markers: dict[str, str] = field(default_factory=dict)
    table: bool = False  # a `try it` command of the README's table

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"

    @property
    def norun(self) -> str | None:
        return self.markers.get("norun")

    @property
    def runs(self) -> bool:
        return self.lang in RUNNABLE and self.norun is None

    @property
    def real_node(self) -> bool:
        return "real-node" in self.markers

    @property
    def exit_code(self) -> int:
        return int(self.markers.get("exit", "0"))

    @property
    def serves(self) -> str | None:
        return self.markers.get("serves")

    def substitutions(self) -> dict[str, str]:
        pairs = shlex.split(self.markers.get("run-with", ""))  # VALUE may be 'quoted shell'
        return dict(p.split("=", 1) for p in pairs)

    def program(self, namespace: str) -> str:
        """The text that runs: console commands only, placeholders and namespace replaced."""
        text = self.text
        if self.lang == "console":
            commands: list[str] = []
            more = False
            for line in text.splitlines():
                if line.startswith("$ ") or more:
                    commands.append(line[2:] if line.startswith("$ ") and not more else line)
                    more = line.rstrip().endswith("\\")
            text = "\n".join(commands) + "\n"
        for name, value in self.substitutions().items():
            text = re.sub(rf"\b{re.escape(name)}\b", value, text)
        return re.sub(rf"\b{DOCS_NAMESPACE}\b", namespace, text)


def _markers(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in lines:
        for name, value in _MARKER.findall(line):
            if name not in FOREIGN:
                found[name] = value
    return found


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, with the markers right before each."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i - 1
        while j >= 0 and lines[j].strip().startswith("<!--") and lines[j].strip().endswith("-->"):
            j -= 1
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        text = "\n".join(lines[i + 1 : end]) + "\n"
        found.append(Block(path, i + 1, m.group(1), text, _markers(lines[j + 1 : i])))
        i = end + 1
    return found


def table_commands(path: Path = ROOT / "README.md") -> list[Block]:
    """The ``try it`` commands of the README's table (its last column), in order. The markers
    right before the table apply to each; a cell's own come right before its command."""
    found = []
    table_markers: dict[str, str] = {}
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines, 1):
        if not line.startswith("| ") or line.startswith("| ---"):
            continue
        if n < len(lines) and lines[n].startswith("| ---"):  # the header: markers before it
            j = n - 2
            while j >= 0 and lines[j].strip().startswith("<!--"):
                j -= 1
            table_markers = _markers(lines[j + 1 : n - 1])
            continue
        cells = re.split(r"(?<!\\)\|", line.rstrip().removesuffix("|"))
        cell = cells[-1].replace("\\|", "|")  # GFM escapes a pipe in a cell
        for comments, command in _CELL_COMMAND.findall(cell):
            markers = {**table_markers, **_markers([comments])}
            found.append(Block(path, n, "sh", command + "\n", markers, table=True))
    return found


def all_blocks() -> list[Block]:
    return [b for doc in DOCS for b in blocks(doc)] + table_commands()


def problems(found: list[Block]) -> list[str]:
    """What makes a block neither runnable nor marked (the unit test lists them)."""
    out = []
    for b in found:
        unknown = set(b.markers) - set(MARKERS)
        if unknown:
            out.append(f"{b.where}: unknown marker(s) {sorted(unknown)} (known: {MARKERS})")
        if not b.lang:
            out.append(f"{b.where}: untagged block: name its language ({RUNNABLE + NOT_COMMANDS})")
        elif b.lang not in RUNNABLE + NOT_COMMANDS:
            out.append(f"{b.where}: unknown language {b.lang!r}")
        if "norun" in b.markers and not b.norun:
            out.append(f"{b.where}: <!-- norun: --> needs its reason")
        if b.lang in NOT_COMMANDS and set(b.markers) - {"norun"}:
            out.append(f"{b.where}: a {b.lang} block is not run: run markers make no sense")
        if "exit" in b.markers and not b.markers["exit"].isdigit():
            out.append(f"{b.where}: <!-- exit: N --> takes a number")
        pairs = shlex.split(b.markers.get("run-with", ""))
        if not all("=" in p for p in pairs):
            out.append(f"{b.where}: <!-- run-with: NAME=value ... -->")
    return out


# -- running ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    block: Block
    code: int | None
    output: str
    seconds: float
    problem: str | None

    def report(self) -> str:
        tail = "\n".join(self.output.splitlines()[-40:])
        return f"--- {self.block.where} ({self.block.lang}): {self.problem}\n{tail}"


def namespaced_kubeconfig(kubeconfig: Path, namespace: str, dest: Path) -> Path:
    """A copy of ``kubeconfig`` whose current context's namespace is ``namespace``."""
    config: dict[str, Any] = yaml.safe_load(kubeconfig.read_text())
    current = config.get("current-context")
    for ctx in config.get("contexts", []):
        if ctx["name"] == current:
            ctx["context"]["namespace"] = namespace
    dest.write_text(yaml.safe_dump(config))
    dest.chmod(0o600)
    return dest


def workdir(dest: Path) -> Path:
    """A fresh copy of what the docs' commands read and write (``.venv`` linked)."""
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)
    (dest / ".venv").symlink_to(Path(sys.executable).parent.parent)
    return dest


def _namespaces(kube: Any) -> set[str]:
    return {n["metadata"]["name"] for n in kube.list("v1", "Namespace")}


CLUSTER_KINDS = ("ClusterRole", "ClusterRoleBinding")  # what `kubectl apply -f deploy/...` leaves


def _cluster_objects(kube: Any) -> set[tuple[str, str]]:
    api = "rbac.authorization.k8s.io/v1"
    return {(k, o["metadata"]["name"]) for k in CLUSTER_KINDS for o in kube.list(api, k)}


def _stop(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _await_output(proc: subprocess.Popen[str], log: Path, pattern: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(pattern, log.read_text(errors="replace")):
            return proc.poll() is None
        if proc.poll() is not None:
            return False
        time.sleep(0.5)
    return False


def _run_one(
    block: Block, *, namespace: str, work: Path, tmp: Path, env: dict[str, str], timeout: float
) -> Outcome:
    script = tmp / ("block.py" if block.lang == "python" else "block.sh")
    script.write_text(block.program(namespace))
    argv = (
        [sys.executable, str(script)]
        if block.lang == "python"
        else ["bash", "-e", "-o", "pipefail", str(script)]
    )
    log = tmp / "output.log"
    started = time.monotonic()
    problem: str | None = None
    with log.open("w") as out:
        proc = subprocess.Popen(
            argv,
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            if block.serves:
                if not _await_output(proc, log, block.serves, timeout):
                    problem = f"the server did not print {block.serves!r} and keep running"
                code = proc.poll()
            else:
                try:
                    code = proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    code, problem = None, f"still running after {timeout:.0f}s"
        finally:
            _stop(proc)  # the block's background jobs too (its own process group)
    seconds = time.monotonic() - started
    output = log.read_text(errors="replace")
    if problem is None and not block.serves and code != block.exit_code:
        problem = f"exit code {code}, documented {block.exit_code}"
    if problem is None and "Traceback (most recent call last)" in output:
        problem = "a Python traceback reached the user"
    return Outcome(block, code, output, seconds, problem)


def run_group(
    group: list[Block],
    *,
    kube: Any,
    kubeconfig: Path,
    tmp: Path,
    env: dict[str, str],
    timeout: float = 600,
) -> list[Outcome]:
    """Run blocks in turn in one fresh namespace and working copy (a group: the README's table;
    every fenced block is a group of its own); what each did against what it documents."""
    from sparkplane_devcluster.cluster import ready_namespace

    namespace = f"docs-{uuid.uuid4().hex[:8]}"
    before, cluster_before = _namespaces(kube), _cluster_objects(kube)
    ready_namespace(kube, namespace)
    tmp.mkdir(parents=True)
    work = workdir(tmp / "work")
    config = namespaced_kubeconfig(kubeconfig, namespace, tmp / "kubeconfig")
    outcomes = []
    try:
        for i, block in enumerate(group):
            (tmp / str(i)).mkdir()
            outcomes.append(
                _run_one(
                    block,
                    namespace=namespace,
                    work=work,
                    tmp=tmp / str(i),
                    env={**env, "KUBECONFIG": str(config)},
                    timeout=timeout,
                )
            )
    finally:
        _cleanup(kube, (_namespaces(kube) - before) | {namespace}, env)
        for kind, name in _cluster_objects(kube) - cluster_before:  # a Helm release would clash
            kube.delete("rbac.authorization.k8s.io/v1", kind, name)
    return outcomes


def _cleanup(kube: Any, namespaces: set[str], env: dict[str, str], timeout: float = 120) -> None:
    """Delete what the blocks created: Helm releases (their cluster-wide objects), namespaces
    (and wait for those of fixed names to be gone: the next run creates them again)."""
    from sparkplane.errors import NotFoundError

    for name in namespaces:
        listed = subprocess.run(
            ["helm", "list", "-q", "-n", name], capture_output=True, text=True, env=env, check=False
        )
        for release in listed.stdout.split():
            subprocess.run(
                ["helm", "uninstall", release, "-n", name, "--wait"],
                capture_output=True,
                env=env,
                check=False,
                timeout=180,
            )
    for name in namespaces:
        try:
            kube.delete("v1", "Namespace", name)
        except NotFoundError:
            pass
    fixed = {n for n in namespaces if not n.startswith("docs-")}
    deadline = time.monotonic() + timeout
    while fixed & _namespaces(kube) and time.monotonic() < deadline:
        time.sleep(1)


def environment(extra: dict[str, str]) -> dict[str, str]:
    """The user's environment, with the venv (and ``helm``) first on ``PATH``."""
    from sparkplane_devcluster.cluster import default_cache_dir
    from sparkplane_devcluster.helmbin import ensure_helm

    helm = ensure_helm(default_cache_dir())
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKPLANE_TEST")}
    env.pop("SPARKPLANE_KUBECONFIG", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), str(helm.parent), env["PATH"]])
    env.update(extra)
    return env


def groups(found: list[Block]) -> list[list[Block]]:
    """Fenced blocks alone, the README table's commands together (in order, one namespace)."""
    table = [b for b in found if b.table]
    return [[b] for b in found if not b.table] + ([table] if table else [])


def run_all(
    found: list[Block], *, kube: Any, kubeconfig: Path, tmp: Path, env: dict[str, str]
) -> list[Outcome]:
    """Run every group (each its own namespace); every outcome, failed or not."""
    outcomes = []
    for i, group in enumerate(groups(found)):
        done = run_group(group, kube=kube, kubeconfig=kubeconfig, tmp=tmp / str(i), env=env)
        for outcome in done:
            print(
                f"[docs] {outcome.block.where} {outcome.block.lang}: "
                f"{outcome.problem or 'ok'} ({outcome.seconds:.1f}s)",
                flush=True,
            )
        outcomes.extend(done)
    return outcomes
