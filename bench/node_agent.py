"""Node-agent cost while it watches N pod cgroups: CPU % and RSS of the agent process.

A fake kubepods tree (cgroup v1 or v2, cgroupfs layout) under a temporary
directory holds N pods of two containers each; their CPU and memory counters
move every second (written by this parent process, which is not measured).
The agent runs in a child process exactly as ``koord node-agent`` does
(collect every 1 s, refresh + NodeMetric every 10 s, encoded with the real
codec) except that records go to a counter instead of a broker. Measured from
outside: CPU % of one core (utime + stime over wall time, /proc/<pid>/stat)
and RSS (VmRSS at the end, VmHWM peak); from inside: collect-round duration.

    python -m bench.node_agent                  # small baseline: 200 pods, 30 s
    python -m bench.node_agent --pods 1000 --seconds 300 --version v2   # large, on demand

Compared with ``bench/node_agent_baseline.json`` (same pods/seconds/version):
a rise of more than 25 % in CPU % or RSS is flagged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINE = Path(__file__).with_name("node_agent_baseline.json")
KUBEPODS = "kubepods"
REGRESSION = 0.25


def pod_dirs(pods: int) -> list[str]:
    tiers = (KUBEPODS, f"{KUBEPODS}/burstable", f"{KUBEPODS}/besteffort")
    return [f"{tiers[i % 3]}/pod{i:08x}-0000-4000-8000-{i:012x}" for i in range(pods)]


def write_tree(root: Path, version: str, pods: int, tick: int) -> None:
    """Every pod and container's counters at second ``tick`` (creating the tree at tick 0)."""
    subsystems = [root] if version == "v2" else [root / s for s in ("cpu", "cpuacct", "memory")]
    if tick == 0 and version == "v2":
        (root / "cgroup.controllers").write_text("cpu memory\n")
    for index, pod in enumerate(pod_dirs(pods)):
        for rel in (pod, f"{pod}/{2 * index + 1:064x}", f"{pod}/{2 * index + 2:064x}"):
            if tick == 0:
                for subsystem in subsystems:
                    (subsystem / rel).mkdir(parents=True, exist_ok=True)
            usage_ns = tick * (index % 7 + 1) * 10**8
            anon = (index % 50 + 10) << 20
            prefix = "total_" if version == "v1" else ""
            memory_stat = "".join(f"{prefix}{key} {value}\n" for key, value in (
                ("cache", 1 << 20), ("rss", anon), ("inactive_anon", anon // 2), ("active_anon", anon // 2),
                ("unevictable", 0), ("active_file", 1 << 19), ("inactive_file", 1 << 19)))
            if version == "v1":
                (root / "cpuacct" / rel / "cpuacct.usage").write_text(f"{usage_ns}\n")
                (root / "cpu" / rel / "cpu.stat").write_text(
                    f"nr_periods {tick * 10}\nnr_throttled {tick}\nthrottled_time {tick * 1000}\n")
                (root / "memory" / rel / "memory.stat").write_text(memory_stat * 4)
            else:
                (root / rel / "cpu.stat").write_text(
                    f"usage_usec {usage_ns // 1000}\nuser_usec 1\nsystem_usec 1\nnr_periods {tick * 10}\n"
                    f"nr_throttled {tick}\nthrottled_usec {tick}\n")
                (root / rel / "memory.stat").write_text(memory_stat * 4)
                (root / rel / "cpu.pressure").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


def child(root: Path, version: str, seconds: float) -> None:
    """The agent, as ``koord node-agent`` runs it, publishing into a counter."""
    from node_agent.agent import NodeAgent
    from node_agent.collectors.gpu import NVML
    from node_agent.publisher import encode_manifest
    from node_agent.run import run_agent
    from node_agent.settings import AgentSettings

    agent = NodeAgent(AgentSettings(node_name="bench", cgroup_root=root, kubepods_dir=KUBEPODS,
                                    cgroup_version=version), nvml=NVML(module=None))
    durations: list[float] = []
    collect = agent.collect

    def timed_collect():
        started = time.perf_counter()
        try:
            return collect()
        finally:
            durations.append(time.perf_counter() - started)
    agent.collect = timed_collect

    class CountingPublisher:
        records = 0

        def submit_manifest(self, manifest, source="<bench>"):
            encode_manifest(manifest, source)
            self.records += 1

    publisher = CountingPublisher()

    async def main():
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(seconds, stop.set)
        await run_agent(agent, publisher, stop)
    asyncio.run(main())
    pods = len(agent.node_metric()["status"]["podsMetric"])
    containers = sum(len(d.containers) for d in agent.details.values())
    print(json.dumps({"pods_reported": pods, "containers_reported": containers, "records": publisher.records,
                      "collect_ms_mean": round(statistics.mean(durations) * 1000, 2),
                      "collect_ms_max": round(max(durations) * 1000, 2)}))


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def measure(pods: int, seconds: float, version: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="koord-bench-") as tmp:
        root = Path(tmp)
        write_tree(root, version, pods, 0)
        proc = subprocess.Popen([sys.executable, "-m", "bench.node_agent", "--child", str(root), "--version", version,
                                 "--seconds", str(seconds)], stdout=subprocess.PIPE, text=True,
                                cwd=Path(__file__).resolve().parent.parent)
        time.sleep(2.0)  # imports and the first round are start-up, not steady state
        cpu0, wall0 = _cpu_seconds(proc.pid), time.monotonic()
        tick, rss, peak, cpu1, wall1 = 1, 0, 0, cpu0, wall0
        while proc.poll() is None and time.monotonic() - wall0 < seconds - 3:
            write_tree(root, version, pods, tick)
            tick += 1
            now_rss, now_peak = _status_kib(proc.pid, "VmRSS"), _status_kib(proc.pid, "VmHWM")
            if now_rss:  # 0 once the child is exiting
                rss, peak, cpu1, wall1 = now_rss, now_peak, _cpu_seconds(proc.pid), time.monotonic()
            time.sleep(max(0.0, 1.0 - (time.monotonic() - wall1)))
        output = proc.communicate(timeout=seconds + 60)[0]
        inside = json.loads(output.strip().splitlines()[-1])
    return {"pods": pods, "seconds": seconds, "version": version,
            "cpu_percent": round(100 * (cpu1 - cpu0) / (wall1 - wall0), 2),
            "rss_mib": round(rss / 1024, 1), "rss_peak_mib": round(peak / 1024, 1), **inside}


def compare(result: dict) -> list[str]:
    if not BASELINE.exists():
        return []
    baseline = next((b for b in json.loads(BASELINE.read_text())
                     if (b["pods"], b["seconds"], b["version"]) == (result["pods"], result["seconds"],
                                                                     result["version"])), None)
    if baseline is None:
        return ["no stored baseline for these parameters"]
    notes = []
    for key in ("cpu_percent", "rss_mib"):
        change = (result[key] - baseline[key]) / baseline[key] if baseline[key] else 0.0
        flag = "REGRESSION" if change > REGRESSION else "ok"
        notes.append(f"{key}: {result[key]} vs baseline {baseline[key]} ({change:+.0%}) {flag}")
    return notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--version", choices=("v1", "v2"), default="v1")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--save", action="store_true", help="Store the result as the baseline for its parameters.")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.version, args.seconds)
        return
    result = measure(args.pods, args.seconds, args.version)
    print(json.dumps(result))
    for note in compare(result):
        print(note)
    if args.save:
        stored = json.loads(BASELINE.read_text()) if BASELINE.exists() else []
        stored = [b for b in stored if (b["pods"], b["seconds"], b["version"]) !=
                  (result["pods"], result["seconds"], result["version"])]
        BASELINE.write_text(json.dumps(stored + [result], indent=2) + "\n")


if __name__ == "__main__":
    main()
