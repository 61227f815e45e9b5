"""The checks of a chaos run, from what the load recorded and the
upstream's log of runs (tests/upstreams/chaos/server.py), and the summary
line printed for a setup.

| number            | counted                                                                 | fails the run |
|-------------------|-------------------------------------------------------------------------|---------------|
| handles           | task handles the gateways gave                                          | |
| lost              | handles whose last `tasks/get` says the task is unknown                 | yes |
| stuck             | handles not terminal (or not readable) at the end of the wait           | yes |
| run twice         | `fast`/`slow_plain` calls the upstream started more than once           | yes |
| flips             | handles read terminal, then later read with another status              | yes |
| idem not completed| `slow_idem` handles that did not end `completed` with their own result, | yes |
|                   | apart from those that spent every run the gateway allows them (shown   | |
|                   | as `+N spent their runs`: cut by kills three times over)               | |
| wrong             | handles completed (or calls answered) with another call's result        | yes |
| thrown away       | `fast`/`slow_plain` handles failed although their run `finished`       | no: a gateway |
|                   | upstream (shown with examples: a sweep of a live gateway would be a    | killed between|
|                   | bug; a gateway killed between the run's end and its write is not)      | end and write |
| overlaps          | calls with two runs at once on the upstream (start..end intervals)      | no |
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

from load import TERMINAL, Load

PLAIN = ("fast", "slow_plain")


def read_runs(path: Path) -> dict[tuple[str, str], list[tuple[float, float, str]]]:
    """(tool, id) -> each run's (start, end, how): `finished` or `cancelled`
    from its end line; `died` for a run with none whose server died (it
    ended before the next `boot` line); `running` for one still going."""
    starts: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    ends: dict[tuple[str, str, str], list[tuple[float, str]]] = collections.defaultdict(list)
    boots: list[float] = []
    text = path.read_text() if path.exists() else ""
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["boot"] and len(parts) >= 3:
            boots.append(float(parts[2]))
        elif parts[:1] == ["start"] and len(parts) >= 5:
            starts[(parts[1], parts[2], parts[3])].append(float(parts[4]))
        elif parts[:1] == ["end"] and len(parts) >= 6:
            ends[(parts[1], parts[2], parts[3])].append((float(parts[4]), parts[5]))
    boots.sort()
    runs: dict[tuple[str, str], list[tuple[float, float, str]]] = collections.defaultdict(list)
    for key, began in starts.items():
        finished = sorted(ends.get(key, []))
        for start in sorted(began):
            end = next((item for item in finished if item[0] >= start), None)
            if end is not None:
                finished.remove(end)
                runs[(key[0], key[1])].append((start, end[0], end[1]))
                continue
            boot = next((boot for boot in boots if boot > start), None)
            runs[(key[0], key[1])].append((start, boot or float("inf"), "died" if boot else "running"))
    return runs


def overlapping(intervals: list[tuple[float, float, str]]) -> bool:
    ordered = sorted(intervals)
    return any(later[0] < earlier[1] for earlier, later in zip(ordered, ordered[1:]))


def shape(message: str) -> str:
    """A message with ids, numbers and addresses made alike, to count kinds."""
    message = re.sub(r"\x1b\[[0-9;]*m", "", message)
    message = re.sub(r"\b[0-9a-f]{32}\b", "<id>", message)
    message = re.sub(r"\bc\d+-\d+\b", "<call>", message)
    message = re.sub(r"\d+(\.\d+)?", "N", message)
    return message.strip()


def log_problems(paths: list[Path], top: int = 12) -> list[str]:
    """The most frequent WARN and ERROR lines of the gateways' logs."""
    counts: collections.Counter[str] = collections.Counter()
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            plain = re.sub(r"\x1b\[[0-9;]*m", "", line)
            found = re.search(r"\b(WARN|ERROR)\b(.*)", plain)
            if found:
                counts[f"{found.group(1)}{shape(found.group(2))[:220]}"] += 1
    return [f"{count:5} x {text}" for text, count in counts.most_common(top)]


def summarize(name: str, seconds: int, seed: int, faults: collections.Counter, load: Load, setup) -> tuple[str, list[str], bool]:
    """The summary line, the detail lines, and whether the run passed."""
    runs = read_runs(setup.runs_log)
    tasks = load.tasks.values()
    outcomes = collections.Counter(call["outcome"] for call in load.calls.values())
    lost = [t for t in tasks if t["final"] == "unknown"]
    # Not terminal at the end, or not readable at all with every process up.
    stuck = [t for t in tasks if t["final"] not in TERMINAL and t["final"] != "unknown"]
    twice = [key for key, each in runs.items() if key[0] in PLAIN and len(each) > 1]
    flips = [t for t in tasks if t["flips"]]
    idem = [t for t in tasks if t["tool"] == "slow_idem"]
    idem_all = [t for t in idem if t["terminal"] != "completed" or t["detail"] != "ok"]
    # The gateway runs an idempotent call again after its own restart and
    # after the upstream died under it, up to its runs in all (3): a task
    # that spent them all fails, saying so, and does not fail the run.
    spent = [t for t in idem_all if "no run of it is left" in t["detail"] or "on the last of its" in t["detail"]]
    idem_bad = [t for t in idem_all if t not in spent]
    # A plain call whose run finished upstream, yet whose task failed: its
    # result was thrown away (a sweep took a live gateway's task, say).
    thrown = [
        t for t in tasks
        if t["tool"] in PLAIN and t["terminal"] == "failed"
        and any(how == "finished" for _, _, how in runs.get((t["tool"], t["id"]), []))
    ]
    wrong = [t for t in tasks if t["detail"].startswith("wrong result")]
    wrong += [call for call in load.calls.values() if call["outcome"] == "sync wrong"]
    overlaps = [key for key, each in runs.items() if len(each) > 1 and overlapping(each)]
    never_ran = [t for t in tasks if t["detail"] == "ok" and (t["tool"], t["id"]) not in runs]
    bad = len(lost) + len(stuck) + len(twice) + len(flips) + len(idem_bad) + len(wrong)
    fault_text = " ".join(f"{kind}={count}" for kind, count in sorted(faults.items())) or "none"
    line = (
        f"chaos {name}: {seconds}s seed={seed} faults[{fault_text}] calls={len(load.calls)} "
        f"sync={outcomes['sync ok']} handles={len(load.tasks)} | lost={len(lost)} stuck={len(stuck)} "
        f"run_twice={len(twice)} flips={len(flips)} idem_not_completed={len(idem_bad)}/{len(idem)} "
        f"(+{len(spent)} spent their runs) "
        f"wrong={len(wrong)} thrown_away={len(thrown)} overlaps={len(overlaps)} | {'FAIL' if bad else 'ok'}"
    )
    details = [f"  calls by outcome: {dict(outcomes)}"]
    for tool in ("fast", "slow_plain", "slow_idem"):
        ends = collections.Counter(t["terminal"] or "none" for t in tasks if t["tool"] == tool)
        if ends:
            details.append(f"  {tool} handles by first terminal status: {dict(ends)}")
    errors = collections.Counter(shape(call["detail"]) for call in load.calls.values() if call["outcome"] not in ("handle", "sync ok"))
    details += [f"  call not taken/answered: {count} x {text}" for text, count in errors.most_common(6)]
    failed = collections.Counter(
        f"{t['tool']}: {shape(t['detail'])}" for t in tasks if t["terminal"] not in (None, "completed") or t["detail"] not in ("ok", "")
    )
    details += [f"  ended without its result: {count} x {text}" for text, count in failed.most_common(10)]
    examples = {
        "lost": [f"{t['tool']} {t['id']}" for t in lost],
        "idem not completed": [f"{t['id']} ({t['terminal']}: {t['detail'][:60]})" for t in idem_bad],
        "stuck": [f"{t['tool']} {t['id']} ({t['final']})" for t in stuck],
        "wrong results": [f"{item['tool']} {item['id']}: {item['detail'][:80]}" for item in wrong],
        "run twice": [f"{tool} {cid} x{len(runs[(tool, cid)])}" for tool, cid in twice],
        "flips": [f"{t['tool']} {t['id']}: {', '.join(t['flips'])}" for t in flips],
        "results thrown away": [f"{t['tool']} {t['id']}: {t['detail'][:60]}" for t in thrown],
        "overlapping runs": [f"{tool} {cid}" for tool, cid in overlaps],
        "completed but never started upstream": [f"{t['tool']} {t['id']}" for t in never_ran],
        "unknown at some read, found later": [
            f"{t['tool']} {t['id']} x{t['unknown']}" for t in tasks if t["unknown"] and t["final"] != "unknown"
        ],
        "tasks/get errors (store or HTTP) during the run": [
            f"{t['tool']} {t['id']} x{t['store_errors']}" for t in tasks if t["store_errors"]
        ],
    }
    for what, items in examples.items():
        if items:
            details.append(f"  {what}: {len(items)}: {', '.join(items[:8])}{' …' if len(items) > 8 else ''}")
    details += [f"  anomaly: {text}" for text in setup.anomalies]
    problems = log_problems([gateway.log for gateway in setup.procs.gateways])
    if problems:
        details.append("  gateway log WARN/ERROR lines, most frequent first:")
        details += [f"    {text}" for text in problems]
    return line, details, bad == 0
