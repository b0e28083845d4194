"""The agent on a fake host in every cgroup layout: samples, system usage, reports, odd files, bounded memory."""

from __future__ import annotations

import pytest

from node_agent.agent import NodeAgent
from node_agent.collectors.gpu import NVML
from node_agent.publisher import encode_manifest
from node_agent.report import Usage
from streams.objects import Document, to_record
from tests.node_agent.conftest import FakeClock, FakeHost, fake_pynvml, kidled_with_cold

GIB = 1 << 30
WEB, BATCH, GONE = ("aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002",
                    "cccccccc-0000-0000-0000-000000000003")
CONTAINER = "4" * 64
NO_GPU = NVML(module=None)


def make_agent(host, clock, nvml=NO_GPU, **overrides) -> NodeAgent:
    return NodeAgent(host.settings(**overrides), monotonic=clock, wall_clock=lambda: 1_700_000_000.0, nvml=nvml)


def two_rounds(host, clock, agent, web_cores=1.5, batch_cores=0.5, node_cores=3.0, seconds=2.0, between=None):
    """Write counters, collect, advance the clock by ``seconds`` with the given usage, collect again."""
    web, batch = host.pod_dir(WEB, "Burstable"), host.pod_dir(BATCH, "BestEffort")
    host.write_cgroup(web, cpu_ns=10**9, anon=2 * GIB, file=GIB)
    host.write_cgroup(host.container_dir(web, CONTAINER), cpu_ns=10**9, anon=GIB)
    host.write_cgroup(batch, cpu_ns=10**9, anon=GIB)
    host.set_node_ticks(busy=10_000)
    agent.collect()
    clock.advance(seconds)
    host.write_cgroup(web, cpu_ns=10**9 + int(web_cores * seconds * 1e9), anon=2 * GIB, file=GIB)
    host.write_cgroup(batch, cpu_ns=10**9 + int(batch_cores * seconds * 1e9), anon=GIB)
    host.set_node_ticks(busy=10_000 + int(node_cores * seconds * 100))
    if between:
        between()
    return agent.collect()


def test_pod_usage_and_system_usage(any_host, clock):
    agent = make_agent(any_host, clock)
    sample = two_rounds(any_host, clock, agent)
    assert sample.pods[WEB].cpu == pytest.approx(1.5) and sample.pods[BATCH].cpu == pytest.approx(0.5)
    assert sample.pods[WEB].memory == 2 * GIB  # usageWithoutPageCache: anon only
    assert sample.node.cpu == pytest.approx(3.0)
    assert sample.node.memory == (16 - 12) * GIB  # MemTotal - MemAvailable
    assert sample.system.cpu == pytest.approx(1.0)
    assert sample.system.memory == 1 * GIB


def test_system_usage_is_clamped_at_zero(fake_host, clock):
    agent = make_agent(fake_host, clock)
    sample = two_rounds(fake_host, clock, agent, web_cores=3.0, batch_cores=2.0, node_cores=1.0)
    assert sample.system.cpu == 0.0


def test_host_applications_are_kept_out_of_system_usage(fake_host, clock, tmp_path):
    config = tmp_path / "apps.yaml"
    config.write_text("- {name: nginx, priority: koord-prod, qos: LS}\n")
    fake_host.write_cgroup("host-latency-sensitive/nginx", cpu_ns=0, anon=GIB // 2)
    agent = make_agent(fake_host, clock, host_applications_file=config)
    sample = two_rounds(fake_host, clock, agent, between=lambda: fake_host.write_cgroup(
        "host-latency-sensitive/nginx", cpu_ns=int(0.25 * 2e9), anon=GIB // 2))
    assert sample.host_apps["nginx"] == Usage(pytest.approx(0.25), GIB // 2)
    assert sample.system.cpu == pytest.approx(3.0 - 1.5 - 0.5 - 0.25)
    (entry,) = agent.node_metric()["status"]["hostApplicationMetric"]
    assert (entry["name"], entry["priority"], entry["qos"]) == ("nginx", "koord-prod", "LS")


def test_node_metric_is_what_koord_apply_sends(any_host, clock):
    agent = make_agent(any_host, clock)
    two_rounds(any_host, clock, agent)
    manifest = agent.node_metric()
    record = to_record(Document("<test>", 0, 1, manifest)).record
    assert record["nodeUsage"] == {"cpu": 3000, "memory": 4 * GIB}
    assert record["updateTime"] == 1_700_000_000_000
    pods = {p["name"]: p for p in manifest["status"]["podsMetric"]}
    assert pods[WEB]["uid"] == WEB and (pods[WEB]["priority"], pods[WEB]["qos"]) == ("koord-prod", "LS")
    assert (pods[BATCH]["priority"], pods[BATCH]["qos"]) == ("koord-batch", "BE")
    encode_manifest(manifest)


def test_aggregated_usages_appear_once_half_a_window_is_sampled(fake_host, clock):
    agent = make_agent(fake_host, clock)
    busy = 0
    for second in range(200):
        fake_host.set_node_ticks(busy=busy)
        agent.collect()
        busy += 100 if second % 10 else 300  # 1 core, every tenth second 3 cores
        clock.advance(1.0)
    windows = {w["duration"]: w["usage"] for w in agent.node_metric()["status"]["nodeMetric"]["aggregatedNodeUsages"]}
    assert windows["5m0s"]["p50"]["resources"]["cpu"] == "1"
    assert windows["5m0s"]["p95"]["resources"]["cpu"] == "3"
    assert windows["10m0s"]["avg"] == {}  # 200 s of a 600 s window: cold start


def test_hot_page_cache_policy_subtracts_kidled_cold_pages(fake_host, clock):
    for knob in ("scan_period_in_seconds", "use_hierarchy"):
        fake_host.write(fake_host.sys / "kernel/mm/kidled" / knob, "5\n")
    fake_host.write(fake_host.cgroup / "memory" / "memory.idle_page_stats", kidled_with_cold(0, GIB))
    agent = make_agent(fake_host, clock, memory_policy="usageWithHotPageCache")
    web = fake_host.pod_dir(WEB)
    fake_host.write_cgroup(web, cpu_ns=0, anon=2 * GIB, file=GIB, idle_page_stats=kidled_with_cold(0, GIB // 2))
    agent.collect()
    agent.refresh()
    sample = agent.collect()
    assert sample.pods[WEB].memory == 2 * GIB + GIB - GIB // 2
    assert sample.node.memory == (16 - 8) * GIB - GIB  # MemTotal - MemFree - cold
    assert agent.details[WEB].cold_bytes == GIB // 2
    record = to_record(Document("<test>", 0, 1, agent.node_metric())).record
    assert (record["memoryCollectPolicy"], record["coldPageBytes"]) == ("usageWithHotPageCache", GIB)
    assert [p["coldPageBytes"] for p in record["podsMetric"]] == [GIB // 2]


def test_hot_page_cache_policy_without_kidled_is_reported_as_without_page_cache(fake_host, clock):
    agent = make_agent(fake_host, clock, memory_policy="usageWithHotPageCache")
    agent.collect()
    record = to_record(Document("<test>", 0, 1, agent.node_metric())).record
    assert (record["memoryCollectPolicy"], record["coldPageBytes"]) == ("usageWithoutPageCache", None)


def test_refresh_reports_throttling_pressure_and_containers(any_host, clock):
    agent = make_agent(any_host, clock)
    web = any_host.pod_dir(WEB)
    psi = "some avg10=2.00 avg60=1.00 avg300=0.50 total=10\n"
    any_host.write_cgroup(web, cpu_ns=0, anon=GIB, throttling=(100, 10, 5), pressure=psi)
    any_host.write_cgroup(any_host.container_dir(web, CONTAINER), cpu_ns=0, anon=GIB)
    agent.collect()
    agent.refresh()
    clock.advance(10)
    any_host.write_cgroup(web, cpu_ns=0, anon=GIB, throttling=(200, 35, 9), pressure=psi)
    any_host.write_cgroup(any_host.container_dir(web, CONTAINER), cpu_ns=5 * 10**9, anon=GIB)
    agent.collect()
    agent.refresh()
    details = agent.details[WEB]
    assert details.throttled_ratio == pytest.approx(0.25)
    (pod,) = to_record(Document("<test>", 0, 1, agent.node_metric())).record["podsMetric"]
    assert pod["throttledRatio"] == pytest.approx(0.25)
    assert details.pressure["cpu"].some_avg10 == 2.0
    assert details.containers[CONTAINER].cpu == pytest.approx(0.5)


def test_damaged_pod_files_cost_values_not_the_agent(fake_host, clock):
    agent = make_agent(fake_host, clock)
    two_rounds(fake_host, clock, agent)
    web = fake_host.pod_dir(WEB)
    (fake_host.cgroup / "memory" / web / "memory.stat").write_bytes(b"\xff\x00garbage")
    (fake_host.cgroup / "cpuacct" / fake_host.pod_dir(BATCH, "BestEffort") / "cpuacct.usage").write_text("x\n")
    (fake_host.proc / "meminfo").write_text("nonsense\n")
    fake_host.write_cgroup(fake_host.pod_dir(GONE), anon=None)
    clock.advance(1)
    sample = agent.collect()
    assert sample.pods[WEB].memory is None and sample.pods[BATCH].cpu is None
    assert sample.node.memory is None and sample.system.memory is None
    pods = {p["name"]: p for p in agent.node_metric()["status"]["podsMetric"]}
    assert GONE not in pods  # nothing readable: not reported
    encode_manifest(agent.node_metric())


def test_memory_stays_flat_with_pod_churn(fake_host):
    clock = FakeClock()
    agent = make_agent(fake_host, clock, aggregate_windows_s=(60.0,), aggregate_duration_s=30.0)
    for round_ in range(600):
        uid = f"dddddddd-0000-0000-0000-{round_ % 50:012d}"
        fake_host.write_cgroup(fake_host.pod_dir(uid), cpu_ns=round_, anon=GIB)
        if round_ >= 10:
            old = f"dddddddd-0000-0000-0000-{(round_ - 10) % 50:012d}"
            for subsystem in ("cpu", "cpuacct", "memory"):
                path = fake_host.cgroup / subsystem / fake_host.pod_dir(old)
                for file in path.iterdir():
                    file.unlink()
                path.rmdir()
        agent.collect()
        clock.advance(1)
    assert len(agent._pod_series) == 10 and len(agent._cpu) == 10
    assert agent._node_series.capacity == 62


def test_device_from_nvml_and_rdma_converts(fake_host, clock):
    agent = make_agent(fake_host, clock, nvml=NVML(fake_host.sys, module=fake_pynvml(count=2)))
    device = agent.device()
    record = to_record(Document("<test>", 0, 1, device)).record
    assert [(d["type"], d["uuid"], d["minor"]) for d in record["devices"]] == [("gpu", "GPU-0", 0), ("gpu", "GPU-1", 1)]
    assert device["metadata"]["labels"]["node.koordinator.sh/gpu-model"] == "A100-SXM4-80GB"
    node = to_record(Document("<test>", 0, 1, agent.node())).record
    assert node["capacity"]["nvidia.com/gpu"] == 2 and node["capacity"]["cpu"] == 4000
    assert make_agent(fake_host, clock).device() is None


def test_node_resource_topology_from_the_fake_sysfs_converts(fake_host, clock):
    record = to_record(Document("<test>", 0, 1, make_agent(fake_host, clock).node_resource_topology())).record
    assert [(zone["name"], {r["name"]: r["allocatable"] for r in zone["resources"]}) for zone in record["zones"]] == [
        ("node-0", {"cpu": 4000, "hugepages-1Gi": 0, "hugepages-2Mi": 0, "memory": 16 * GIB})]


def test_a_host_without_any_cgroup_tree_still_reports(tmp_path, clock):
    host = FakeHost(tmp_path)
    agent = NodeAgent(host.settings(cgroup_root=tmp_path / "no-cgroups"), monotonic=clock, nvml=NO_GPU)
    agent.collect()
    agent.refresh()
    metric = agent.node_metric()
    assert metric["status"]["podsMetric"] == []
    assert metric["status"]["nodeMetric"]["nodeUsage"]["resources"]["memory"] == "4Gi"
