"""Benchmark: staging server upload + download throughput against a plain file copy.

Starts ``sparkplane staging serve`` in a subprocess on 127.0.0.1, uploads a file of
``--size-mb`` MiB with the staging client, downloads it back, and compares each direction with
copies of the same file on the same disk, each followed by fsync when the server fsyncs:

* ``cp`` -- the baseline of the target. Issue 7 asks for ">= 70% of a plain file copy on the
  same disk"; ``cp`` is what "a plain file copy" means to an operator, and it is the hard
  baseline: it copies inside the kernel (``copy_file_range``), never through user space.
* ``shutil.copyfileobj`` with 1 MiB buffers -- shown for context only (what a Python program
  copying a file achieves); it is never used to judge the target.

Prints throughputs, the server's peak resident memory (``VmHWM`` from /proc/<pid>/status) and
the load average (other work on the machine skews every figure). Every timed phase starts after
``sync`` and the rounds interleave copies and transfers, because a VM disk's write-back makes
single runs noisy; medians are reported. Targets (issue 7): upload and download each >= 70% of
``cp``, server < 100 MB resident.

    .venv/bin/python benchmarks/staging_throughput.py --size-mb 1024
"""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from sparkplane.staging.client import download_bundle, upload_bundle
from sparkplane.staging.owner import ResourceOwner

MiB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def make_source(path: Path, size_mb: int) -> None:
    block = os.urandom(MiB)  # one random MiB, varied per block so nothing dedups or compresses
    with open(path, "wb") as out:
        for i in range(size_mb):
            out.write(i.to_bytes(8, "little") + block[8:])


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(4 * MiB):
            digest.update(chunk)
    return digest.hexdigest()


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def timed_cp(src: Path, dst: Path, fsync: bool) -> float:
    start = time.perf_counter()
    subprocess.run(["cp", str(src), str(dst)], check=True)
    if fsync:
        fsync_file(dst)
    return time.perf_counter() - start


def timed_loop_copy(src: Path, dst: Path, fsync: bool) -> float:
    start = time.perf_counter()
    with open(src, "rb", buffering=0) as fin, open(dst, "wb", buffering=0) as fout:
        shutil.copyfileobj(fin, fout, MiB)
        if fsync:
            os.fsync(fout.fileno())
    return time.perf_counter() - start


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("server did not become healthy in time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temp dir")
    parser.add_argument("--no-fsync", action="store_true", help="server and copies skip fsync")
    parser.add_argument("--no-verify", action="store_true", help="skip the sha256 comparison")
    parser.add_argument("--rounds", type=int, default=3, help="repeat and report medians")
    args = parser.parse_args()
    fsync = not args.no_fsync
    size = args.size_mb * MiB

    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="staging-bench-", dir=args.workdir))
    timings: dict[str, list[float]] = {"cp": [], "loop": [], "upload": [], "download": []}
    try:
        src = work / "source.bin"
        make_source(src, args.size_mb)
        fsync_file(src)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        token = secrets.token_urlsafe(32)
        (work / "upload-secrets").write_text(f"bench:{token}\n")
        command = [
            sys.executable, "-m", "sparkplane.cli", "staging", "serve",
            "--host", "127.0.0.1", "--port", str(port),
            "--storage-dir", str(work / "store"), "--db-path", str(work / "meta.sqlite3"),
            "--max-bundle-mb", str(args.size_mb + 1),
            "--upload-secret-file", str(work / "upload-secrets"),
            "--total-quota-mb", "0", "--namespace-quota-mb", "0",  # rounds accumulate
            "--fsync" if fsync else "--no-fsync",
        ]  # fmt: skip
        server = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        owner = ResourceOwner("bench", {"app": "staging-bench"})
        identical = True
        try:
            wait_healthy(url, server)
            idle_rss = proc_status_kb(server.pid, "VmRSS")
            for _ in range(args.rounds):  # interleaved, so every kind sees the same disk weather
                for kind, copy in (("cp", timed_cp), ("loop", timed_loop_copy)):
                    os.sync()
                    timings[kind].append(copy(src, work / "copy.bin", fsync))
                    (work / "copy.bin").unlink()
                os.sync()
                start = time.perf_counter()
                staged = upload_bundle(url, src, owner, token=token)
                timings["upload"].append(time.perf_counter() - start)
                dst = work / "downloaded.bin"
                os.sync()
                start = time.perf_counter()
                download_bundle(url, staged.resource_id, staged.secret, dst)
                if fsync:
                    fsync_file(dst)
                timings["download"].append(time.perf_counter() - start)
                if not args.no_verify:
                    identical = identical and sha256(src) == sha256(dst)
                dst.unlink()
                (work / "store" / f"{staged.resource_id}.bundle").unlink()
            peak_rss = proc_status_kb(server.pid, "VmHWM")
            load_after = os.getloadavg()
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    median = {kind: statistics.median(values) for kind, values in timings.items()}

    def mbps(seconds: float) -> float:
        return float(size / MiB / seconds)

    def spread(kind: str) -> str:
        return "/".join(f"{mbps(t):.0f}" for t in timings[kind])

    def loads(values: tuple[float, float, float]) -> str:
        return " ".join(f"{v:.2f}" for v in values)

    verified = "skipped" if args.no_verify else str(identical)
    print(f"size: {args.size_mb} MiB  fsync: {fsync}  rounds: {args.rounds}  identical: {verified}")
    print(f"load average (1/5/15 min): before {loads(load_before)}, after {loads(load_after)}"
          f"  on {os.cpu_count()} CPUs")  # fmt: skip
    print("medians (each round's MiB/s in brackets):")
    print(f"  {'copy (cp)':<24} {mbps(median['cp']):8.1f} MiB/s  [{spread('cp')}]  <- baseline")
    print(
        f"  {'copy (copyfileobj 1MiB)':<24} {mbps(median['loop']):8.1f} MiB/s  [{spread('loop')}]"
    )
    ratios = {}
    for kind in ("upload", "download"):
        ratios[kind] = median["cp"] / median[kind]
        print(
            f"  {kind:<24} {mbps(median[kind]):8.1f} MiB/s  [{spread(kind)}]  "
            f"{ratios[kind]:6.1%} of cp, {median['loop'] / median[kind]:6.1%} of copyfileobj"
        )
    rss_mb = peak_rss / 1024
    print(f"server RSS: idle {idle_rss / 1024:.1f} MB, peak VmHWM {rss_mb:.1f} MB")
    met = min(ratios.values()) >= 0.70 and rss_mb < 100
    verdict = "met" if met else "NOT met"
    print(f"targets (upload and download >= 70% of cp, server < 100 MB): {verdict}")


if __name__ == "__main__":
    main()
