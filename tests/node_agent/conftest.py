"""Shared fixtures of the node-agent tests: a fake host (proc, sys, cgroup trees) and a settable clock.

``FakeHost`` writes the files the collectors read under ``tmp_path``, for
cgroup v1 (one directory per subsystem) or v2 (unified), cgroupfs or systemd
layout. Tests that need root and the machine's real cgroup hierarchy carry the
``real_cgroups`` marker.
"""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path

import pytest

from node_agent.settings import AgentSettings


def pytest_configure(config):
    config.addinivalue_line("markers", "real_cgroups: needs root and a writable cgroup hierarchy on this machine")


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclasses.dataclass
class FakeHost:
    root: Path
    version: str = "v1"
    driver: str = "cgroupfs"
    kubepods: str = "kubepods"

    def __post_init__(self) -> None:
        self.proc, self.sys, self.cgroup = self.root / "proc", self.root / "sys", self.root / "cgroup"
        self.set_node_ticks(busy=0)
        self.set_meminfo(total_kb=16 << 20, free_kb=8 << 20, available_kb=12 << 20)
        self.write(self.sys / "devices/system/cpu/online", "0-3\n")
        for cpu in range(4):
            topo = self.sys / f"devices/system/cpu/cpu{cpu}/topology"
            self.write(topo / "physical_package_id", "0\n")
            self.write(topo / "core_id", f"{cpu % 2}\n")
            self.write(topo / "thread_siblings_list", f"{cpu % 2},{cpu % 2 + 2}\n")
        self.write(self.sys / "devices/system/node/node0/cpulist", "0-3\n")
        self.write(self.sys / "devices/system/node/node0/meminfo",
                   f"Node 0 MemTotal:       {16 << 20} kB\nNode 0 MemFree:        {8 << 20} kB\n")
        self.write(self.proc / "cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n"
                                          "model name\t: Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz\n")
        if self.version == "v2":
            self.write(self.cgroup / "cgroup.controllers", "cpuset cpu io memory pids\n")
        for _, tier in self.tiers():
            for subsystem in self._subsystems():
                (subsystem / tier).mkdir(parents=True, exist_ok=True)

    @staticmethod
    def write(path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def settings(self, **overrides) -> AgentSettings:
        values = dict(node_name="fake-node", proc_root=self.proc, sys_root=self.sys, cgroup_root=self.cgroup,
                      kubepods_dir=self.kubepods)
        return AgentSettings(**{**values, **overrides})

    def set_node_ticks(self, busy: int, idle: int = 1000) -> None:
        """The aggregate cpu line: busy ticks split over user and system; idle, iowait and steal add noise."""
        user, system = busy // 2, busy - busy // 2
        self.write(self.proc / "stat", f"cpu  {user} 0 {system} {idle} 77 0 0 55 0 0\ncpu0 1 0 1 1 0 0 0 0 0 0\n"
                                        "intr 1 2 3\nctxt 42\n")

    def set_meminfo(self, total_kb: int, free_kb: int, available_kb: int) -> None:
        self.write(self.proc / "meminfo", f"MemTotal:       {total_kb} kB\nMemFree:        {free_kb} kB\n"
                                           f"MemAvailable:   {available_kb} kB\nBuffers:          1024 kB\n")

    def _subsystems(self) -> list[Path]:
        if self.version == "v2":
            return [self.cgroup]
        return [self.cgroup / name for name in ("cpu", "cpuacct", "memory")]

    def tiers(self) -> list[tuple[str, str]]:
        k = self.kubepods
        if self.driver == "systemd":
            return [("Guaranteed", f"{k}.slice"), ("Burstable", f"{k}.slice/{k}-burstable.slice"),
                    ("BestEffort", f"{k}.slice/{k}-besteffort.slice")]
        return [("Guaranteed", k), ("Burstable", f"{k}/burstable"), ("BestEffort", f"{k}/besteffort")]

    def pod_dir(self, uid: str, qos: str = "Burstable") -> str:
        tier = dict(self.tiers())[qos]
        if self.driver == "systemd":
            infix = {"Guaranteed": "", "Burstable": "-burstable", "BestEffort": "-besteffort"}[qos]
            return f"{tier}/{self.kubepods}{infix}-pod{uid.replace('-', '_')}.slice"
        return f"{tier}/pod{uid}"

    def container_dir(self, pod_dir: str, container_id: str) -> str:
        name = f"cri-containerd-{container_id}.scope" if self.driver == "systemd" else container_id
        return f"{pod_dir}/{name}"

    def path(self, subsystem: str, rel: str) -> Path:
        return self.cgroup / rel if self.version == "v2" else self.cgroup / subsystem / rel

    def write_cgroup(self, rel: str, cpu_ns: int | None = None, anon: int | None = None, file: int = 0,
                     throttling: tuple[int, int, int] | None = None, pressure: str | None = None,
                     idle_page_stats: str | None = None) -> None:
        """Counters of one cgroup; None leaves that file out. ``anon`` is split over the anon keys."""
        for subsystem in self._subsystems():
            (subsystem / rel).mkdir(parents=True, exist_ok=True)
        v1 = self.version == "v1"
        prefix = "total_" if v1 else ""
        if anon is not None:
            stat = (f"{prefix}inactive_anon {anon // 2}\n{prefix}active_anon {anon - anon // 2 - 4096}\n"
                    f"{prefix}unevictable 4096\n{prefix}active_file {file // 2}\n"
                    f"{prefix}inactive_file {file - file // 2}\n")
            self.write(self.path("memory", rel) / "memory.stat", ("cache 1\nrss 2\n" if v1 else "anon 3\n") + stat)
        if v1:
            if cpu_ns is not None:
                self.write(self.path("cpuacct", rel) / "cpuacct.usage", f"{cpu_ns}\n")
            if throttling is not None:
                periods, throttled, ns = throttling
                self.write(self.path("cpu", rel) / "cpu.stat",
                           f"nr_periods {periods}\nnr_throttled {throttled}\nthrottled_time {ns}\n")
        else:
            lines = [] if cpu_ns is None else [f"usage_usec {cpu_ns // 1000}", "user_usec 1", "system_usec 1"]
            if throttling is not None:
                periods, throttled, ns = throttling
                lines += [f"nr_periods {periods}", f"nr_throttled {throttled}", f"throttled_usec {ns // 1000}"]
            if lines:
                self.write(self.path("cpu", rel) / "cpu.stat", "\n".join(lines) + "\n")
        if pressure is not None:
            for resource in ("cpu", "memory", "io"):
                self.write(self.path("cpuacct", rel) / f"{resource}.pressure", pressure)
        if idle_page_stats is not None:
            self.write(self.path("memory", rel) / "memory.idle_page_stats", idle_page_stats)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake_host(tmp_path) -> FakeHost:
    return FakeHost(tmp_path)


@pytest.fixture(params=[("v1", "cgroupfs"), ("v1", "systemd"), ("v2", "cgroupfs"), ("v2", "systemd")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def any_host(request, tmp_path) -> FakeHost:
    """The same fake host in each of the four cgroup layouts."""
    version, driver = request.param
    return FakeHost(tmp_path, version=version, driver=driver)


KIDLED_SAMPLE = """# version: 1.0
# page_scans: 24
# slab_scans: 0
# scan_period_in_seconds: 120
# use_hierarchy: 1
# buckets: 1,2,5,15,30,60,120,240
#
#   _-----=> clean/dirty
#  / _----=> swap/file
# | / _---=> evict/unevict
# || / _--=> inactive/active
# ||| / _-=> slab
# |||| /
# |||||             [1,2)          [2,5)         [5,15)        [15,30)        [30,60)       [60,120)      [120,240)     [240,+inf)
  csei            2613248        4657152       18182144      293683200              0              0              0              0
  dsei            2568192        5140480       15306752       48648192              0              0              0              0
  cfei            2633728        4640768       66531328      340172800              0              0              0              0
  dfei                  0              0           4096              0              0              0              0              0
  csui                  0              0              0              0              0              0              0              0
  dsui                  0              0              0              0              0              0              0              0
  cfui                  0              0              0              0              0              0              0              0
  dfui                  0              0              0              0              0              0              0              0
  csea             765952        1044480        3784704       52834304              0              0              0              0
  dsea             286720         270336        1564672        5390336              0              0              0              0
  cfea            9273344       16609280      152109056      315121664              0              0              0              0
  dfea                  0              0              0              0              0              0              0              0
  csua                  0              0              0              0              0              0              0              0
  dsua                  0              0              0              0              0              0              0              0
  cfua                  0              0              0              0              0              0              0              0
  dfua                  0              0              0              0              0              0              0              0
  slab                  0              0              0              0              0              0              0              0
"""
"""kidled_util_test.go's sample (TV-3-39)."""


def kidled_with_cold(cfei_4: int, cfei_5: int) -> str:
    """The sample with cfei[4] and cfei[5] set and the earlier cold-kind buckets kept (TV-3-40's shape)."""
    lines = KIDLED_SAMPLE.splitlines()
    for i, line in enumerate(lines):
        if line.split()[:1] == ["cfei"]:
            values = line.split()[1:]
            values[4], values[5] = str(cfei_4), str(cfei_5)
            lines[i] = "  cfei " + " ".join(values)
    return "\n".join(lines) + "\n"


class NVMLError(Exception):
    pass


def fake_pynvml(count=2, fail=None):
    """A pynvml-shaped module with ``count`` GPUs; ``fail`` names a function that raises NVMLError."""
    def call(name, result):
        def fn(*args):
            if name == fail:
                raise NVMLError(name)
            return result(*args) if callable(result) else result
        return fn
    return types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=call("nvmlInit", None), nvmlShutdown=call("nvmlShutdown", None),
        nvmlSystemGetDriverVersion=call("nvmlSystemGetDriverVersion", "535.161.08"),
        nvmlDeviceGetCount=call("nvmlDeviceGetCount", count),
        nvmlDeviceGetHandleByIndex=call("nvmlDeviceGetHandleByIndex", lambda i: i),
        nvmlDeviceGetUUID=call("nvmlDeviceGetUUID", lambda h: f"GPU-{h}"),
        nvmlDeviceGetMinorNumber=call("nvmlDeviceGetMinorNumber", lambda h: h),
        nvmlDeviceGetMemoryInfo=call("nvmlDeviceGetMemoryInfo",
                                     lambda h: types.SimpleNamespace(total=80 << 30, used=(h + 1) << 30)),
        nvmlDeviceGetName=call("nvmlDeviceGetName", lambda h: b"NVIDIA A100-SXM4-80GB"),
        nvmlDeviceGetPciInfo=call("nvmlDeviceGetPciInfo", lambda h: types.SimpleNamespace(busId=f"00000000:3B:0{h}.0")),
        nvmlDeviceGetUtilizationRates=call("nvmlDeviceGetUtilizationRates", lambda h: types.SimpleNamespace(gpu=40 + h)),
    )
