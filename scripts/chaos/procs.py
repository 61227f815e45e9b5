"""The processes of a chaos run: the upstream, the gateways and the Redis
nodes, each started again on the same port (and files) after a fault.

Every process writes to its own log in the run's folder, appended across
restarts with a `=== start|kill -9|SIGTERM ... ===` line between lives.
`Procs.close()` kills whatever is still running (SIGSTOPped ones too).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_port(avoid: set[int] = frozenset(), bus: bool = False) -> int:
    """A loopback port free now (and, for a cluster node, free +10000 too)."""
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port in avoid or (bus and (port + 10000 > 65535 or port + 10000 in avoid)):
            continue
        if bus:
            try:
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port found")


def accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Proc:
    """One restartable process listening on `port`."""

    def __init__(self, name: str, argv: list[str], port: int, log: Path, env: dict | None = None):
        self.name, self.argv, self.port, self.log = name, argv, port, log
        self.env = env
        self.child: subprocess.Popen | None = None
        self.stopped = False  # SIGSTOPped

    def note(self, text: str) -> None:
        with open(self.log, "a") as log:
            log.write(f"=== {time.strftime('%H:%M:%S')} {text} ===\n")

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child else None

    def running(self) -> bool:
        return self.child is not None and self.child.poll() is None

    async def start(self, within: float = 60) -> None:
        """Starts it and waits (bounded) until its port accepts."""
        self.note(f"start {' '.join(self.argv)}")
        with open(self.log, "a") as log:
            self.child = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env
            )
        deadline = time.monotonic() + within
        while not await asyncio.to_thread(accepts, self.port):
            if self.child.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.child.returncode}) at start; see {self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not listen on {self.port} within {within}s; see {self.log}")
            await asyncio.sleep(0.1)

    def signal(self, sig: int) -> None:
        if self.running():
            self.note(f"signal {signal.Signals(sig).name}")
            os.kill(self.child.pid, sig)
            self.stopped = sig == signal.SIGSTOP or (self.stopped and sig != signal.SIGCONT)

    async def wait_exit(self, within: float) -> bool:
        """Whether it exited within `within` seconds."""
        deadline = time.monotonic() + within
        while self.running():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.1)
        return True

    async def kill9(self) -> None:
        self.signal(signal.SIGKILL)
        await self.wait_exit(10)
        self.stopped = False

    def close(self) -> None:
        if self.running():
            self.child.kill()
            self.child.wait()


def cli(port: int, *args: str, timeout: float = 5) -> str:
    """`redis-cli -p PORT ARGS...`'s output ('' when it fails)."""
    try:
        done = subprocess.run(
            ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=timeout
        )
        return done.stdout
    except (subprocess.TimeoutExpired, OSError):
        return ""


def redis_argv(port: int, folder: Path, cluster: bool, node_timeout_ms: int) -> list[str]:
    """A redis-server that keeps every acknowledged write on disk (AOF,
    fsync always), in `folder`, in the foreground."""
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "no"]
    argv += ["--dir", str(folder), "--save", "", "--appendonly", "yes", "--appendfsync", "always"]
    if cluster:
        argv += ["--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf"]
        argv += ["--cluster-node-timeout", str(node_timeout_ms), "--repl-diskless-sync-delay", "0"]
    return argv


def cluster_nodes(ports: list[int], skip: set[int] = frozenset()) -> list[dict]:
    """The cluster as one reachable node sees it: port, role, primary's id,
    whether it is failed."""
    for port in ports:
        if port in skip:
            continue
        text = cli(port, "cluster", "nodes", timeout=2)
        if not text.strip():
            continue
        nodes = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 8:
                continue
            flags = parts[2].split(",")
            nodes.append(
                {
                    "id": parts[0],
                    "port": int(parts[1].split("@")[0].rsplit(":", 1)[1]),
                    "primary": "master" in flags,
                    "failed": "fail" in flags or "fail?" in flags,
                    "of": parts[3] if parts[3] != "-" else None,
                    "slots": len(parts) > 8,
                }
            )
        return nodes
    return []


def cluster_healthy(ports: list[int]) -> str | None:
    """None when every node says cluster_state:ok and every primary with
    slots has a replica that is not failed; else what is wrong."""
    for port in ports:
        if "cluster_state:ok" not in cli(port, "cluster", "info", timeout=2):
            return f"node {port} is not ok"
    nodes = cluster_nodes(ports)
    for node in nodes:
        if node["failed"]:
            return f"node {node['port']} is failed"
        if node["primary"] and node["slots"]:
            if not any(other["of"] == node["id"] and not other["failed"] for other in nodes):
                return f"primary {node['port']} has no replica"
    return None if nodes else "no node answers"


async def wait_for(what: str, check, within: float) -> None:
    """Waits until `check()` (run in a thread) returns None; raises with its
    last answer after `within` seconds."""
    deadline = time.monotonic() + within
    while (problem := await asyncio.to_thread(check)) is not None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: {problem} after {within}s")
        await asyncio.sleep(0.3)


class Procs:
    """Every process of one setup, for faults and for the final cleanup."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.upstream: Proc | None = None
        self.gateways: list[Proc] = []
        self.redis: list[Proc] = []

    def all(self) -> list[Proc]:
        return ([self.upstream] if self.upstream else []) + self.gateways + self.redis

    def close(self) -> None:
        for proc in self.all():
            if proc.stopped and proc.running():
                os.kill(proc.child.pid, signal.SIGCONT)
            proc.close()
