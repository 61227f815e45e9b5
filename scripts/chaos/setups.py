"""The three durable setups of a chaos run and the faults each one takes.

| setup   | processes                                                   | faults |
|---------|-------------------------------------------------------------|--------|
| sqlite  | upstream, 1 gateway `--sqlite FILE`                         | gateway kill -9, gateway SIGTERM (drain), upstream kill -9 |
| redis   | upstream, 2 gateways `--redis`, 1 redis-server (AOF, fsync always) | the same, and redis-server kill -9 |
| cluster | upstream, 3 gateways `--redis-cluster --redis-wait-replicas 1 --redis-lease 20s`, 3+3 cluster | the same as sqlite, primary kill -9 (its replica takes over), primary SIGSTOP for 15 s |

Each fault restarts what it stopped on the same port and files, and
returns only once that is up again (the cluster: healthy again), so faults
never overlap.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
from pathlib import Path

from procs import Proc, Procs, cli, cluster_healthy, cluster_nodes, free_port, redis_argv, wait_for

FAULTS = {
    "sqlite": ["gateway-kill9", "gateway-term", "upstream-kill9"],
    "redis": ["gateway-kill9", "gateway-term", "upstream-kill9", "redis-kill9"],
    "cluster": ["gateway-kill9", "gateway-term", "upstream-kill9", "primary-kill9", "primary-stop15"],
}
# Only when asked for (chaos.sh's CHAOS_EXTRA_FAULTS): a gateway frozen
# past its Redis lease (10 s) while its calls still run on the upstream.
EXTRA_FAULTS = ["gateway-stop15"]
GATEWAYS = {"sqlite": 1, "redis": 2, "cluster": 3}
NODE_TIMEOUT_MS = 2000
# A drain ends within --shutdown-grace (10 s) + 2 x --poll-interval + 10 s.
DRAIN_BOUND = 45


class Setup:
    def __init__(self, name: str, folder: Path, gateway: str, python: str, server: str, max_runtime: int, extra: list[str]):
        self.name, self.folder, self.extra = name, folder, extra
        self.procs = Procs(folder)
        self.gateway_bin, self.python, self.server = gateway, python, server
        self.max_runtime = max_runtime
        self.runs_log = folder / "runs.log"
        self.urls: list[str] = []
        self.anomalies: list[str] = []

    async def start(self) -> None:
        procs = self.procs
        taken: set[int] = set()
        store: list[str] = []
        if self.name == "sqlite":
            store = ["--sqlite", str(self.folder / "tasks.sqlite3")]
        elif self.name == "redis":
            port = free_port(taken)
            taken.add(port)
            data = self.folder / "redis"
            data.mkdir()
            procs.redis.append(Proc("redis", redis_argv(port, data, False, 0), port, self.folder / "redis.log"))
            await procs.redis[0].start()
            store = ["--redis", f"redis://127.0.0.1:{port}"]
        else:
            await self.start_cluster(taken)
            seeds = ",".join(f"redis://127.0.0.1:{node.port}" for node in procs.redis)
            # Longer than a failover here takes (a primary stopped 15 s left
            # its shards without a renewal for up to 12 s): with the 10 s
            # default every gateway fenced itself out of them.
            store = ["--redis-cluster", seeds, "--redis-wait-replicas", "1", "--redis-lease", "20s"]
        port = free_port(taken)
        taken.add(port)
        argv = [self.python, self.server, f"127.0.0.1:{port}", str(self.runs_log)]
        procs.upstream = Proc("upstream", argv, port, self.folder / "upstream.log")
        await procs.upstream.start()
        upstream = f"http://127.0.0.1:{port}/mcp"
        for number in range(GATEWAYS[self.name]):
            port = free_port(taken)
            taken.add(port)
            argv = [self.gateway_bin, "--upstream", upstream, "--listen", f"127.0.0.1:{port}", *store]
            argv += ["--max-runtime", f"{self.max_runtime}s", "--ttl", "2h", "--max-tasks-per-principal", "10000"]
            argv += self.extra
            log = self.folder / f"gateway{number}.log"
            procs.gateways.append(Proc(f"gateway{number}", argv, port, log))
            await procs.gateways[-1].start()
            self.urls.append(f"http://127.0.0.1:{port}/mcp")

    async def start_cluster(self, taken: set[int]) -> None:
        for number in range(6):
            port = free_port(taken, bus=True)
            taken.update({port, port + 10000})
            data = self.folder / f"node{number}"
            data.mkdir()
            argv = redis_argv(port, data, True, NODE_TIMEOUT_MS)
            self.procs.redis.append(Proc(f"node{number}", argv, port, self.folder / f"node{number}.log"))
            await self.procs.redis[-1].start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.procs.redis]
        done = await asyncio.to_thread(
            subprocess.run,
            ["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True, text=True, timeout=60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout}{done.stderr}")
        await wait_for("the new cluster", lambda: cluster_healthy(self.ports()), 60)

    def ports(self) -> list[int]:
        return [node.port for node in self.procs.redis]

    # -- faults --------------------------------------------------------

    async def fault(self, kind: str, rng: random.Random) -> str:
        """Does one fault and what restarting needs; says what it did."""
        procs = self.procs
        if kind == "gateway-kill9":
            gateway = rng.choice(procs.gateways)
            await gateway.kill9()
            await asyncio.sleep(rng.uniform(0.5, 3))
            await gateway.start()
            return f"kill -9 {gateway.name}, restarted"
        if kind == "gateway-term":
            gateway = rng.choice(procs.gateways)
            began = asyncio.get_running_loop().time()
            gateway.signal(signal.SIGTERM)
            if not await gateway.wait_exit(DRAIN_BOUND):
                self.anomalies.append(f"{gateway.name} still running {DRAIN_BOUND}s after SIGTERM")
                await gateway.kill9()
            took = asyncio.get_running_loop().time() - began
            await asyncio.sleep(0.5)
            await gateway.start()
            return f"SIGTERM {gateway.name} (exited after {took:.1f}s), restarted"
        if kind == "gateway-stop15":
            gateway = rng.choice(procs.gateways)
            gateway.signal(signal.SIGSTOP)
            await asyncio.sleep(15)
            gateway.signal(signal.SIGCONT)
            return f"SIGSTOP {gateway.name} for 15 s, SIGCONT"
        if kind == "upstream-kill9":
            await procs.upstream.kill9()
            await asyncio.sleep(rng.uniform(0.5, 3))
            await procs.upstream.start()
            return "kill -9 upstream, restarted"
        if kind == "redis-kill9":
            node = procs.redis[0]
            await node.kill9()
            await asyncio.sleep(rng.uniform(0.5, 3))
            await node.start()
            return "kill -9 redis-server, restarted"
        if kind in ("primary-kill9", "primary-stop15"):
            return await self.primary_fault(kind, rng)
        raise ValueError(kind)

    def node(self, port: int) -> Proc:
        return next(node for node in self.procs.redis if node.port == port)

    async def primary_fault(self, kind: str, rng: random.Random) -> str:
        nodes = await asyncio.to_thread(cluster_nodes, self.ports())
        primaries = [node for node in nodes if node["primary"] and node["slots"]]
        if not primaries:
            self.anomalies.append("no primary with slots found for a cluster fault")
            return "no primary found: fault skipped"
        victim = rng.choice(primaries)
        proc = self.node(victim["port"])
        replicas = [node["port"] for node in nodes if node["of"] == victim["id"]]

        def promoted() -> str | None:
            for port in replicas:
                if "role:master" in cli(port, "info", "replication", timeout=2):
                    return None
            return f"no replica of {victim['port']} promoted"

        if kind == "primary-kill9":
            await proc.kill9()
            await wait_for("failover", promoted, 30)
            await asyncio.sleep(rng.uniform(1, 5))
            await proc.start()
            what = f"kill -9 primary {proc.name} :{proc.port}, replica promoted, restarted"
        else:
            proc.signal(signal.SIGSTOP)
            await asyncio.sleep(15)
            failed_over = (await asyncio.to_thread(promoted)) is None
            proc.signal(signal.SIGCONT)
            what = f"SIGSTOP primary {proc.name} :{proc.port} for 15 s ({'replica promoted' if failed_over else 'no failover'}), SIGCONT"
        await wait_for("the cluster after a fault", lambda: cluster_healthy(self.ports()), 90)
        return what
