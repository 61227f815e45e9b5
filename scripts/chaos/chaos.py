"""The driver of scripts/chaos.sh (its header says what a run does and what
the numbers mean); run through that script, which installs what this needs.

    python chaos.py SETUP|all --gateway BIN --work DIR [--seconds N]
                    [--clients N] [--seed N] [--max-runtime N]

One setup at a time: start its processes, run the load and the faults for
`--seconds`, stop the load, wait (bounded) for every handle to end, read
every handle once more, print the summary; exit 1 when a setup failed its
checks, 2 when one could not be set up.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import random
import shlex
import signal
import sys
import time
from pathlib import Path

from check import summarize
from load import Load
from setups import EXTRA_FAULTS, FAULTS, Setup

HERE = Path(__file__).resolve().parent
SERVER = HERE.parent.parent / "tests" / "upstreams" / "chaos" / "server.py"


def say(text: str) -> None:
    print(text, flush=True)


async def faults(
    setup: Setup, seed: int, until: float, gap: tuple[float, float], counts: collections.Counter, began: float, extra: list[str]
) -> None:
    """Faults in the setup's list, picked at random (seeded), one every
    `gap` seconds, until `until`."""
    rng = random.Random(seed)
    kinds = FAULTS[setup.name] + extra
    while True:
        await asyncio.sleep(rng.uniform(*gap))
        if time.monotonic() >= until:
            return
        kind = rng.choice(kinds)
        at = time.monotonic() - began
        what = await setup.fault(kind, rng)
        counts[kind] += 1
        say(f"  [{at:6.1f}s] {kind}: {what} ({time.monotonic() - began - at:.1f}s)")


async def run_setup(name: str, args: argparse.Namespace) -> tuple[bool, str]:
    folder = Path(args.work) / name
    folder.mkdir(parents=True)
    setup = Setup(name, folder, args.gateway, sys.executable, str(SERVER), args.max_runtime, shlex.split(args.gateway_args))
    load: Load | None = None
    try:
        say(f"== chaos {name}: starting (logs in {folder})")
        await setup.start()
        load = Load(setup.urls, args.clients, args.seed, args.max_runtime, say)
        began = time.monotonic()
        until = began + args.seconds
        counts: collections.Counter = collections.Counter()
        say(f"== chaos {name}: {args.clients} clients for {args.seconds}s over {len(setup.urls)} gateway(s), faults {FAULTS[name] + args.extra_faults}")
        stop_polling = asyncio.Event()
        poller = asyncio.create_task(load.poller(stop_polling))
        gap = (args.gap_min, args.gap_max)
        # Faults end a little before the load, so the last one is not cut.
        await asyncio.gather(
            faults(setup, args.seed, until - 5, gap, counts, began, args.extra_faults),
            *(load.client(number, until) for number in range(args.clients)),
        )
        # Everything is up again here: every fault restarts what it stopped.
        bound = args.max_runtime + 40
        say(f"== chaos {name}: load stopped; waiting up to {bound}s for {load.open_count()} open handle(s)")
        deadline = time.monotonic() + bound
        while load.open_count() and time.monotonic() < deadline:
            await asyncio.sleep(1)
        stop_polling.set()
        await poller
        await load.final_pass()
        line, details, ok = summarize(name, args.seconds, args.seed, counts, load, setup)
        say("\n".join(details))
        say(line)
        return ok, line
    finally:
        if load:
            await load.close()
        setup.procs.close()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("setup", choices=[*FAULTS, "all"])
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--seconds", type=int, default=180)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-runtime", type=int, default=60)
    parser.add_argument("--gap-min", type=float, default=8)
    parser.add_argument("--gap-max", type=float, default=16)
    parser.add_argument("--gateway-args", default="", help="more options for every gateway")
    parser.add_argument("--extra-faults", default="", help=f"comma-separated, of {EXTRA_FAULTS}")
    args = parser.parse_args()
    args.extra_faults = [kind for kind in args.extra_faults.split(",") if kind]
    if unknown := set(args.extra_faults) - set(EXTRA_FAULTS):
        parser.error(f"unknown extra faults {sorted(unknown)}; known: {EXTRA_FAULTS}")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1_000_000)
    say(f"chaos: seed {args.seed} (CHAOS_SEED={args.seed} repeats the same schedule of faults)")
    names = list(FAULTS) if args.setup == "all" else [args.setup]
    current = asyncio.current_task()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, current.cancel)
    results = {}
    for name in names:
        try:
            results[name] = await run_setup(name, args)
        except RuntimeError as error:
            say(f"chaos {name}: could not be set up or faulted: {error}")
            return 2
    failed = [name for name, (ok, _) in results.items() if not ok]
    if len(results) > 1:
        say("== chaos: summary")
        say("\n".join(line for _, line in results.values()))
    say(f"chaos: {'failed: ' + ', '.join(failed) if failed else 'every setup passed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    # A process group of its own, whose id is this pid: chaos.sh's exit trap
    # ends it and everything started here with one kill.
    try:
        os.setsid()
    except OSError:  # already a group leader
        pass
    try:
        sys.exit(asyncio.run(main()))
    except asyncio.CancelledError:
        sys.exit(143)
