"""A real node (``streams.kube.node``): kubelet and containerd run pods, the node agent measures and acts on
the containers they created.

One control plane and one node for the module (started once: containerd, kubelet, the bridge CNI and the
images cost seconds warm, the apt-get install and the kubelet build minutes cold). The module's finalizer
stops the node and fails the module when anything it made is left: a process, a mount under its folder,
the bridge, a cgroup, a shim socket.

Skipped, with the reason, when not root (containerd, kubelet and cgroups need it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import json
import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as HttpClient, ConnectionParams

from node_agent.actuator.actuator import Actuator
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.agent import NodeAgent
from node_agent.kubeletconfig import find as find_kubelet
from node_agent.settings import AgentSettings
from tests.integration.crash_support import CrashCluster
from streams import kafka, supervision
from streams.cli.top import human
from streams.schemas import codec
from streams.topology import load_topology
from streams.cli.kube import CRDS
from streams.kube import images, nodefiles
from streams.kube.node import SHIM_SOCKETS, LocalNode, mounts_under, processes_with, v1_hierarchies

pytestmark = [pytest.mark.integration, pytest.mark.real_cgroups, pytest.mark.measures]

PODS = "/api/v1/namespaces/default/pods"
ROOT = Path(__file__).resolve().parents[2]
FAKE_NVML = ROOT / "tests" / "node_agent" / "fakenvml"
WAIT_S = 90
CGROUP_ROOT = nodefiles.CGROUP_ROOT.lstrip("/")
TOLERANCE = 0.15


def wait_for(condition, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout:g}s for {what}")


def leftovers(node: LocalNode, pids: dict[str, int]) -> list[str]:
    """What a stopped node left behind: processes, mounts, the bridge, cgroups, shim sockets."""
    found = [f"{name} pid {pid}" for name, pid in pids.items() if Path(f"/proc/{pid}").exists()
             and "zombie" not in Path(f"/proc/{pid}/status").read_text()]
    found += [f"shim pid {pid}" for pid in processes_with(str(node.socket), "containerd-shim-runc-v2")]
    found += [f"mount {point}" for point in mounts_under(node.directory)]
    found += [f"link {nodefiles.BRIDGE}"] if (Path("/sys/class/net") / nodefiles.BRIDGE).exists() else []
    found += [f"cgroup {h / CGROUP_ROOT}" for h in v1_hierarchies() if (h / CGROUP_ROOT).exists()]
    found += [f"shim socket {s}" for s in SHIM_SOCKETS.glob("*")] if SHIM_SOCKETS.is_dir() else []
    return found


@pytest.fixture(scope="module")
def node(plane):
    if os.geteuid() != 0:
        pytest.skip("needs root to run containerd and kubelet and to create cgroups")
    local = LocalNode(plane.directory / "node", plane.pki)
    started = time.monotonic()
    try:
        state = local.start(plane.state()["server"])
    except BaseException:
        pytest.fail(f"the node did not start; left behind: {leftovers(local, {})}", pytrace=True)
        raise
    print(f"\nnode Ready {time.monotonic() - started:.1f}s after start (packages and kubelet cached)")
    try:
        yield local
    finally:
        local.stop()
        left = leftovers(local, state["pids"])
        assert not left, f"the stopped node left: {left}"


@pytest.fixture(scope="module")
def admin(plane):
    client = HttpClient(KubeConfig.from_file(plane.kubeconfig).get(), ConnectionParams())
    yield client
    client.close()


@pytest.fixture(autouse=True)
def pods_removed(node, admin):
    """Each test starts on an empty node: the pods of the one before are deleted, and kubelet has removed
    them (their CPU requests would make kubelet refuse the next test's pods: OutOfcpu)."""
    yield
    admin.delete(PODS)
    wait_for(lambda: not admin.get(PODS).json()["items"], "kubelet to remove the test's pods")


def pod(name: str, command: str, resources: dict | None = None, labels: dict | None = None) -> dict:
    container = {"name": "main", "image": images.BUSYBOX_IMAGE, "command": ["sh", "-c", command]}
    if resources:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                            "labels": labels or {}},
            "spec": {"nodeName": "koord-node", "terminationGracePeriodSeconds": 1, "containers": [container]}}


def run_pod(admin, body: dict) -> dict:
    """Create the pod and wait until kubelet reports it Running; returns the pod."""
    response = admin.post(PODS, json=body)
    assert response.status_code == 201, response.text
    name = body["metadata"]["name"]

    last = {}

    def running():
        last.update(admin.get(f"{PODS}/{name}").json())
        return dict(last) if last["status"].get("phase") == "Running" else None
    try:
        return wait_for(running, f"kubelet to run pod {name}")
    except AssertionError as error:
        events = admin.get("/api/v1/namespaces/default/events").json()["items"]
        raise AssertionError(f"{error}; node {last['spec'].get('nodeName')}, status {last['status']}, events "
                             f"{[(e['reason'], e['message']) for e in events if e['involvedObject']['name'] == name]}")


def container_id(pod: dict) -> str:
    return pod["status"]["containerStatuses"][0]["containerID"].removeprefix("containerd://")


BUSY = "while :; do :; done"


def test_kubelet_runs_a_pod_with_an_address_of_the_bridge_network_in_a_cgroup_of_its_limit(node, admin):
    started = run_pod(admin, pod("hello", "sleep 3600", {"limits": {"cpu": "200m", "memory": "64Mi"}}))
    assert ipaddress.ip_address(started["status"]["podIP"]) in ipaddress.ip_network(nodefiles.POD_SUBNET)
    assert started["status"]["qosClass"] == "Guaranteed"
    folder = Path("/sys/fs/cgroup/cpu", CGROUP_ROOT, "kubepods", f"pod{started['metadata']['uid']}",
                  container_id(started))
    assert (folder / "cpu.cfs_quota_us").read_text().strip() == "20000", "200m of a 100ms period"
    assert node.ctr("images", "ls", "-q").split() >= sorted([images.BUSYBOX_IMAGE, images.PAUSE_IMAGE])


def test_the_node_agent_finds_kubelets_layout_and_measures_a_busy_container(node, admin):
    found = find_kubelet(Path("/proc"))
    assert found is not None and (found.driver, found.kubepods) == ("cgroupfs", f"{CGROUP_ROOT}/kubepods")
    busy = run_pod(admin, pod("busy", BUSY, {"limits": {"cpu": "500m", "memory": "64Mi"}}))
    uid, cid = busy["metadata"]["uid"], container_id(busy)
    agent = NodeAgent(AgentSettings(node_name="koord-node", collect_interval_s=1.0, report_interval_s=1.0,
                                    aggregate_duration_s=2.0))
    assert (agent.layout.driver, agent.layout.kubepods) == ("cgroupfs", f"{CGROUP_ROOT}/kubepods")
    for _ in range(3):
        agent.collect()
        agent.refresh()
        time.sleep(1.0)
    agent.collect()
    agent.refresh()
    assert uid in agent._pod_cgroups, f"the agent did not find pod {uid} in {agent.layout.tiers()}"
    container = agent.details[uid].containers[cid]
    report = next(p for p in agent.node_metric()["status"]["podsMetric"] if p["name"] == uid)
    print(f"\nbusy container limited to 0.5 CPU: the agent measured {container.cpu:.3f} CPU")
    assert 0 < container.cpu <= 0.5 * (1 + TOLERANCE)
    assert report["podUsage"]["resources"]["cpu"]
    assert agent.node()["status"]["capacity"]["cpu"] == str(os.cpu_count())


def _actuation(sequence: int, kind: str, target: str, values: dict[str, str]) -> dict:
    return {"decisionId": f"real-node-{uuid.uuid4()}", "nodeName": "koord-node", "sequence": sequence,
            "targetKind": kind, "targetId": target, "mechanism": "cgroup", "values": values, "signature": None,
            "causation": {"inboxTopic": "test", "inboxPartition": 0, "inboxOffset": 0, "sourceTopic": "test",
                          "sourcePartition": 0, "sourceOffset": 0},
            "timestamp": int(time.time() * 1000)}


def test_actuations_reach_the_cgroups_of_containers_kubelet_created(node, admin, tmp_path):
    """A BE-tier CPU quota holds a busy BestEffort container; a pod's cpuset reaches its container's cgroup
    (the v1 backend writes the pod's subtree, as koordlet's cpuset hook)."""
    be = run_pod(admin, pod("be-busy", BUSY))
    lse = run_pod(admin, pod("lse", "sleep 3600", {"limits": {"cpu": "1", "memory": "64Mi"}}))
    assert be["status"]["qosClass"] == "BestEffort"
    agent = NodeAgent(AgentSettings(node_name="koord-node"))
    actuator = Actuator("koord-node", {"cgroup": CgroupV1Backend(agent.layout)},
                        Verifier("koord-node", None, SequenceStore(tmp_path / "state")))
    tier = Path("/sys/fs/cgroup/cpu", CGROUP_ROOT, "kubepods", "besteffort")
    be_container = Path("/sys/fs/cgroup/cpuacct", CGROUP_ROOT, "kubepods", "besteffort",
                        f"pod{be['metadata']['uid']}", container_id(be))
    usage = be_container / "cpuacct.usage"
    unlimited = _cpu_over(usage, 3.0)
    before = (tier / "cpu.cfs_quota_us").read_text().strip()
    ack = actuator.apply(_actuation(1, "qos", "BE", {"cpu.cfs_quota_us": "30000", "cpu.cfs_period_us": "100000"}))
    assert ack["applied"] and ack["error"] is None, ack
    after = (tier / "cpu.cfs_quota_us").read_text().strip()
    throttled = _throttled(tier / "cpu.stat")
    limited = _cpu_over(usage, 3.0)
    throttled = _throttled(tier / "cpu.stat") - throttled
    print(f"\nBE tier quota {before} -> {after}; the busy BE container used {unlimited:.3f} CPU before, "
          f"{limited:.3f} CPU after ({throttled} throttled periods)")
    assert (before, after) == ("-1", "30000")
    assert limited <= 0.3 * (1 + TOLERANCE)

    cpuset = Path("/sys/fs/cgroup/cpuset", CGROUP_ROOT, "kubepods", f"pod{lse['metadata']['uid']}",
                  container_id(lse), "cpuset.cpus")
    ack = actuator.apply(_actuation(2, "pod", lse["metadata"]["uid"], {"cpuset.cpus": "1"}))
    assert ack["applied"] and ack["error"] is None, ack
    print(f"LSE container cpuset.cpus: {cpuset.read_text().strip()}")
    assert cpuset.read_text().strip() == "1"
    if unlimited < 0.3 and throttled == 0:
        pytest.skip(f"the machine is saturated: the BE container got {unlimited:.3f} CPU without a quota and was "
                    "never throttled with one, so the quota's hold on it was not measured")


def _cpu_over(usage: Path, seconds: float) -> float:
    """CPUs a cgroup used over ``seconds`` (its ``cpuacct.usage``)."""
    first, started = int(usage.read_text()), time.monotonic()
    time.sleep(seconds)
    return (int(usage.read_text()) - first) / 1e9 / (time.monotonic() - started)


def _throttled(stat: Path) -> int:
    return next(int(line.split()[1]) for line in stat.read_text().splitlines() if line.startswith("nr_throttled "))


# The co-location loop: koordstream (broker, worker, projection), `koord bridge --mode active` against the
# control plane and `koord node-agent` on the real node, each a process as a deployment runs them.

SUPPRESS_CONFIG = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
    "data": {"colocation-config": json.dumps({"enable": True, "cpuReclaimThresholdPercent": 65,
                                              "memoryReclaimThresholdPercent": 65, "degradeTimeMinutes": 15,
                                              "updateTimeThresholdSeconds": 300, "resourceDiffThreshold": 0.1}),
             "resource-threshold-config": json.dumps({"clusterStrategy": {
                 "enable": True, "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cfsQuota"}})}}
BATCH_CPU, BATCH_MEMORY = "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"
USAGE_THRESHOLDS = "scheduling.koordinator.sh/usage-thresholds"


@dataclasses.dataclass
class Loop:
    cluster: CrashCluster
    processes: dict[str, subprocess.Popen]

    def log(self, name: str) -> str:
        return (self.cluster.home / f"{name}.log").read_text(errors="replace")[-3000:]


QOS_LINK, QOS_PEER_LINK = "koordq0", "koordq1"
QOS_PREFIX, QOS_PEER = "198.18.0.0/24", "198.18.0.1"
"""The network QoS test's way out of the node: a veth pair, with the benchmarking prefix (RFC 2544) routed into
``koordq0`` and a permanent neighbour entry for its address, so packets from a pod cross ``koordq0``'s egress
qdisc (the tc backend's HTB) and are dropped at the peer. This kernel has no ``dummy`` link type."""


@pytest.fixture(scope="module")
def qos_link():
    """``(name, None)`` of the interface the node agent shapes, or ``(None, why)`` when it cannot be made."""
    made = subprocess.run(["ip", "link", "add", QOS_LINK, "type", "veth", "peer", "name", QOS_PEER_LINK],
                          capture_output=True, text=True)
    if made.returncode != 0:
        yield None, f"`ip link add {QOS_LINK} type veth peer name {QOS_PEER_LINK}` failed: {made.stderr.strip()}"
        return
    try:
        for args in (["link", "set", QOS_LINK, "up"], ["link", "set", QOS_PEER_LINK, "up"],
                     ["route", "add", QOS_PREFIX, "dev", QOS_LINK],
                     ["neigh", "add", QOS_PEER, "lladdr", "02:00:00:00:00:01", "dev", QOS_LINK, "nud", "permanent"]):
            subprocess.run(["ip", *args], check=True, capture_output=True, text=True)
        yield QOS_LINK, None
    finally:
        subprocess.run(["ip", "link", "del", QOS_LINK], capture_output=True)


@pytest.fixture(scope="module")
def loop(node, plane, admin, qos_link, tmp_path_factory):
    """koordstream, the bridge and the node agent for the loop's tests. The node agent runs as a DaemonSet's
    does, with ``--kube-api`` as ``koord-node-agent`` (the ClusterRole of ``deploy/kubernetes/node-agent.yaml``,
    ``node-agent.kubeconfig`` of the node), its NVML answers for one faked GPU (``tests/node_agent/fakenvml``)
    and its tc backend shapes :data:`QOS_LINK`. Two annotations on koord-node make
    this loaded 2-core machine usable: ``usage-thresholds`` of 0 (unchecked) turns koordstream's LoadAware
    filter off for it, since the machine's other work keeps its CPU usage above any threshold; and the node
    agent's ``cpu-topology``, which the scheduler needs to pin CPUs: the agent publishes its Node on the
    nodes topic, but the bridge publishes kubelet's Node (without it) there too and the later record wins."""
    plane.install(CRDS)
    home = tmp_path_factory.mktemp("loop")
    cluster = CrashCluster.start(home, "tansu")
    processes: dict[str, subprocess.Popen] = {}
    topology = NodeAgent(AgentSettings(node_name="koord-node")).node()["metadata"]["annotations"]
    annotated = admin.patch("/api/v1/nodes/koord-node", json={"metadata": {"annotations": {
        **topology, USAGE_THRESHOLDS: json.dumps({"usageThresholds": {"cpu": 0, "memory": 0}})}}},
        headers={"Content-Type": "application/merge-patch+json"})
    assert annotated.status_code == 200, annotated.text
    try:
        cluster.start_worker("worker")
        env = {**os.environ, **cluster.env}
        for name, args in (("bridge", ["bridge", "--kubeconfig", str(plane.kubeconfig), "--mode", "active"]),
                           ("node-agent", ["node-agent", "--node-name", "koord-node", "--report-interval", "2",
                                           "--aggregate-duration", "4", "--state-dir", str(home / "agent-state"),
                                           "--kube-api", "--kubeconfig", str(node.node_agent_kubeconfig),
                                           *(["--tc-interface", qos_link[0]] if qos_link[0] else [])])):
            if name == "node-agent":
                env = {**env, "PYTHONPATH": os.pathsep.join([str(FAKE_NVML), str(ROOT), env.get("PYTHONPATH", "")])}
            processes[name] = subprocess.Popen(supervision.koord_command(*args), stdout=open(home / f"{name}.log", "ab"),
                                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                               process_group=0)
        yield Loop(cluster, processes)
    finally:
        supervision.stop(list(processes.values()))
        cluster.stop()


def koord_pod(name: str, command: str, resources: dict | None, qos: str) -> dict:
    """A pod koordstream schedules (``schedulerName: koord-scheduler``) with Koordinator's QoS label."""
    body = pod(name, command, resources, labels={"koordinator.sh/qosClass": qos})
    body["spec"].pop("nodeName")
    body["spec"]["schedulerName"] = "koord-scheduler"
    return body


def ensure_config(admin) -> None:
    """The slo-controller-config of :data:`SUPPRESS_CONFIG`, unless a test before made it."""
    path = "/api/v1/namespaces/koordinator-system/configmaps"
    if admin.get(f"{path}/slo-controller-config").status_code == 404:
        created = admin.post(path, json=SUPPRESS_CONFIG)
        assert created.status_code == 201, created.text


def top_nodes(loop: Loop) -> str:
    return loop.cluster.koord("top", "nodes", "--once").stdout


def test_the_bridge_writes_batch_allocatable_and_kubelet_admits_a_be_pod_requesting_it(loop, admin):
    ensure_config(admin)
    started = time.monotonic()

    def batch_allocatable():
        allocatable = admin.get("/api/v1/nodes/koord-node").json()["status"]["allocatable"]
        return allocatable if BATCH_CPU in allocatable else None
    allocatable = wait_for(batch_allocatable, f"the bridge to write {BATCH_CPU} into koord-node's status "
                                              f"(bridge log: {loop.log('bridge')})", timeout=120)
    print(f"\nbatch allocatable on the real node {time.monotonic() - started:.1f}s after the config: "
          f"{allocatable[BATCH_CPU]} batch-cpu, {allocatable.get(BATCH_MEMORY)} batch-memory")
    try:
        allocatable = wait_for(lambda: (a := batch_allocatable()) and int(a[BATCH_CPU]) >= 100 and a,
                               "100 batch-cpu or more", timeout=60)
    except AssertionError:
        pytest.skip(f"koord-node's {BATCH_CPU} stayed below 100 for 60s: the machine's own load leaves no CPU to "
                    f"reclaim below the 65% threshold, so no BE pod can be admitted (koord top nodes:\n"
                    f"{top_nodes(loop)})")
    request = str(min(int(allocatable[BATCH_CPU]), 500))
    running = run_pod(admin, koord_pod("be-batch", "sleep 3600", {"requests": {BATCH_CPU: request},
                                                                  "limits": {BATCH_CPU: request}}, "BE"))
    assert running["status"]["qosClass"] == "BestEffort"
    assert "koordstream.io/decision-id" in running["metadata"].get("annotations", {}), "bound by koordstream"
    shown = human(BATCH_CPU, int(request))
    row = wait_for(lambda: (r := _top_row(loop)) and r[5].startswith(f"{shown}/") and r,
                   f"koord top nodes to show koord-node's {shown} batch-cpu requested (it shows:\n{top_nodes(loop)})")
    assert row[1].split("/")[0] != "-" and row[3].split("/")[0] != "-", f"the real node's usage: {row}"
    explained = wait_for(lambda: (out := loop.cluster.koord("explain", "node", "koord-node")).returncode == 0 and
                         f"requested by its pods: {request}" in out.stdout and out, "koord explain node koord-node "
                         "to show the BE pod's batch-cpu")
    assert "node usage: cpu " in explained.stdout
    print(f"BE pod requesting {request} {BATCH_CPU} admitted and running:\n{top_nodes(loop)}\n{explained.stdout}")


def _top_row(loop: Loop) -> list[str] | None:
    """koord-node's row of ``koord top nodes``: name, cpu use/req/alloc, cpu%, memory, memory%, batch-cpu
    req/alloc, batch-memory, mid-cpu, mid-memory."""
    return next((line.split() for line in top_nodes(loop).splitlines() if line.startswith("koord-node ")), None)


DEVICE = "/apis/scheduling.koordinator.sh/v1alpha1/devices/koord-node"
NODEMETRIC = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/koord-node"
DEVICE_ALLOCATED = "scheduling.koordinator.sh/device-allocated"
GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO = "koordinator.sh/gpu-core", "koordinator.sh/gpu-memory", "koordinator.sh/gpu-memory-ratio"


def test_a_shared_gpu_pod_runs_carrying_the_gpu_koordstream_allocated_from_the_node_agents_device(loop, admin):
    """The node agent's NVML answers for one faked GPU; the rest is the product's: the agent creates Device
    koord-node and NodeMetric koord-node on the API server (as ``koord-node-agent``, status through the
    subresource), the bridge writes the Device's GPU resources into the node status beside batch,
    koordstream's DeviceShare allocates half the GPU to a shared-GPU pod, the bridge patches
    ``device-allocated`` onto the pod before the Binding, and kubelet runs the pod (it admits extended resources
    its node status does not list, for a scheduler that knows them: kubelet's ``removeMissingExtendedResources``)."""
    ensure_config(admin)
    device = wait_for(lambda: (r := admin.get(DEVICE)).status_code == 200 and r.json(),
                      f"the node agent to create Device koord-node (node agent log: {loop.log('node-agent')})")
    node_uid = admin.get("/api/v1/nodes/koord-node").json()["metadata"]["uid"]
    assert [(d["type"], d["id"], d["resources"][GPU_MEMORY]) for d in device["spec"]["devices"]] == [("gpu", "GPU-0", "80Gi")]
    assert [(o["kind"], o["uid"]) for o in device["metadata"]["ownerReferences"]] == [("Node", node_uid)]
    metric = wait_for(lambda: (r := admin.get(NODEMETRIC)).status_code == 200 and r.json().get("status") and r.json(),
                      f"the node agent to write NodeMetric koord-node's status (log: {loop.log('node-agent')})")
    assert metric["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"]
    status = wait_for(lambda: (a := admin.get("/api/v1/nodes/koord-node").json()["status"]["allocatable"]).get(GPU_CORE)
                      and a, "the bridge to write the Device's GPU resources into the node status (koord-manager's "
                             "device resource sync)", timeout=120)
    assert (status[GPU_CORE], status[GPU_MEMORY], status[GPU_MEMORY_RATIO]) == ("100", str(80 * 2**30), "100")
    assert status["kubernetes.io/batch-cpu"] and status["cpu"], "batch beside device resources, kubelet's kept"
    shared = {GPU_CORE: "50", GPU_MEMORY_RATIO: "50"}
    running = run_pod(admin, koord_pod("gpu-shared", "sleep 3600", {"limits": shared}, "LS"))
    annotations = running["metadata"].get("annotations", {})
    assert DEVICE_ALLOCATED in annotations, f"the pod kubelet runs lacks {DEVICE_ALLOCATED}: {annotations}"
    allocated = json.loads(annotations[DEVICE_ALLOCATED])
    print(f"\nshared-GPU pod running on koord-node with {DEVICE_ALLOCATED}: {annotations[DEVICE_ALLOCATED]}")
    assert [(g["minor"], g["resources"]) for g in allocated["gpu"]] == [
        (0, {GPU_CORE: "50", GPU_MEMORY: "40Gi", GPU_MEMORY_RATIO: "50"})]


def test_cpu_suppress_sets_the_real_be_quota_when_ls_usage_rises_and_raises_it_when_it_falls(loop, admin):
    """The pods are bound by ``spec.nodeName`` (as a DaemonSet's are): on a loaded machine koordstream's
    LoadAware filter would refuse the node, and suppress does not depend on how a pod got there."""
    ensure_config(admin)
    be = run_pod(admin, pod("be-suppressed", BUSY, labels={"koordinator.sh/qosClass": "BE"}))
    tier = Path("/sys/fs/cgroup/cpu", CGROUP_ROOT, "kubepods", "besteffort", "cpu.cfs_quota_us")
    usage = Path("/sys/fs/cgroup/cpuacct", CGROUP_ROOT, "kubepods", "besteffort", f"pod{be['metadata']['uid']}",
                 container_id(be), "cpuacct.usage")
    quiet = wait_for(lambda: (q := tier.read_text().strip()) != "-1" and q,
                     f"CPU suppress to set the BE tier's quota (node agent log: {loop.log('node-agent')})", timeout=120)
    quiet_cpu = _cpu_over(usage, 3.0)
    run_pod(admin, pod("ls-burner", BUSY, {"requests": {"cpu": "1", "memory": "64Mi"}, "limits": {"memory": "64Mi"}},
                       labels={"koordinator.sh/qosClass": "LS"}))
    try:
        loaded = wait_for(lambda: int(tier.read_text()) < int(quiet) and tier.read_text().strip(),
                          "the BE quota to shrink under the LS burner", timeout=60)
    except AssertionError:
        loaded = tier.read_text().strip()
    loaded_cpu = _cpu_over(usage, 3.0)
    assert admin.delete(f"{PODS}/ls-burner").status_code == 200
    try:
        restored = wait_for(lambda: int(tier.read_text()) > int(loaded) and tier.read_text().strip(),
                            "the BE quota to grow once the LS burner is gone", timeout=60)
    except AssertionError:
        restored = tier.read_text().strip()
    print(f"\nBE tier cfs quota (period 100000): {quiet} before the LS burner (BE container {quiet_cpu:.3f} CPU), "
          f"{loaded} with it ({loaded_cpu:.3f} CPU), {restored} after it left\n{top_nodes(loop)}")
    assert int(quiet) > 0 and int(loaded) > 0 and int(restored) > 0
    assert loaded_cpu <= int(loaded) / 100_000 * (1 + TOLERANCE) + 0.05
    if not (int(loaded) <= int(quiet) and int(loaded) < int(restored)):
        pytest.skip(f"the suppress quota did not follow the LS burner ({quiet} -> {loaded} -> {restored}): the "
                    f"machine's other load dominates the node's usage (koord top nodes:\n{top_nodes(loop)})")


NET_QOS_CONFIG = {
    "resource-qos-config": json.dumps({"clusterStrategy": {
        "policies": {"netQOSPolicy": "terway-qos"},
        "lsClass": {"networkQOS": {"enable": True, "egressRequest": "50M", "egressLimit": "100M"}},
        "beClass": {"networkQOS": {"enable": True, "egressRequest": "1M", "egressLimit": "1M"}}}}),
    "system-config": json.dumps({"clusterStrategy": {"totalNetworkBandwidth": "600M"}})}
"""The v1.5 article's terway-qos config (seed 004-03) with the BE class held to 1 Mbit/s, below what the BE pod
sends, so its class's limit shows in the counters."""
L2_CLASS = "1:12"
PING_BYTES = 1400
STATS = re.compile(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)")


def test_network_qos_puts_the_be_pods_traffic_in_its_class_on_the_nodes_interface(loop, admin, qos_link):
    """terway-qos classes on a real interface of the node: the stream plans L0/L1/L2 from the config and a
    ``priority`` 2 (L2) for the BE pod from the agent's NodeMetric; the agent finds the pod's address in its
    Pod record (kubelet's ``status.podIP`` on the bridge network) and files its packets into L2 by source
    address. The pod pings an address routed out through :data:`QOS_LINK`. Measured from the class's counters:
    what the pod offered (sent + dropped) and what L2 let through, against L2's 1 Mbit/s ceiling."""
    link, why = qos_link
    if link is None:
        pytest.skip(why)
    ensure_config(admin)
    patched = admin.patch("/api/v1/namespaces/koordinator-system/configmaps/slo-controller-config",
                          json={"data": NET_QOS_CONFIG}, headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status_code == 200, patched.text
    be = run_pod(admin, pod("be-net", f"ping -q -s {PING_BYTES} -i 0.002 {QOS_PEER}",
                            labels={"koordinator.sh/qosClass": "BE"}))
    source = f"{int(ipaddress.ip_address(be['status']['podIP'])):08x}/ffffffff at 12"
    wait_for(lambda: source in _tc("filter", "show", "dev", link) and f"flowid {L2_CLASS}" in _tc(
        "filter", "show", "dev", link), f"the node agent to file the BE pod's address into {L2_CLASS} on {link} "
             f"(filters: {_tc('filter', 'show', 'dev', link)}; node agent log: {loop.log('node-agent')})", timeout=120)
    first, started = _class_stats(link), time.monotonic()
    time.sleep(5.0)
    last, seconds = _class_stats(link), time.monotonic() - started
    sent_bps = (last[0] - first[0]) * 8 / seconds
    packet = (last[0] - first[0]) / max(last[1] - first[1], 1)
    offered_bps = (last[0] - first[0] + (last[2] - first[2]) * packet) * 8 / seconds
    print(f"\nBE pod {be['status']['podIP']} in {L2_CLASS} on {link}: offered {offered_bps / 1e6:.2f} Mbit/s, "
          f"L2 (ceiling 1 Mbit/s) let {sent_bps / 1e6:.2f} Mbit/s through, {last[3] - first[3]} overlimits")
    assert last[1] > first[1], f"no packet of the BE pod went through {L2_CLASS}"
    assert sent_bps <= 1e6 * (1 + TOLERANCE), "L2's ceiling"
    if offered_bps <= 1e6:
        pytest.skip(f"the BE pod offered only {offered_bps / 1e6:.2f} Mbit/s (the machine is loaded), under L2's "
                    "ceiling: its traffic is classified but the ceiling's hold was not measured")


def _tc(*args: str) -> str:
    return subprocess.run(["tc", *args], capture_output=True, text=True, check=True).stdout


def _class_stats(link: str) -> tuple[int, int, int, int]:
    """(bytes, packets, dropped, overlimits) of :data:`L2_CLASS` on ``link``."""
    found = STATS.search(_tc("-s", "class", "show", "dev", link, "classid", L2_CLASS))
    assert found, f"no class {L2_CLASS} on {link}"
    return tuple(int(value) for value in found.groups())


def test_memory_eviction_decision_to_kubelet_reporting_the_be_pod_gone(loop, admin):
    """Memory eviction at a threshold below the machine's own usage: the node agent's NodeMetric makes the
    stream decide an Eviction of the BE pods, the bridge evicts through the Eviction API and kubelet stops
    the container and deletes the pod. Measured: the decision's timestamp to the pod's 404."""
    ensure_config(admin)
    victim = run_pod(admin, pod("be-evicted", "sleep 3600", labels={"koordinator.sh/qosClass": "BE"}))
    config = admin.get("/api/v1/namespaces/koordinator-system/configmaps/slo-controller-config").json()
    threshold = json.loads(config["data"]["resource-threshold-config"])
    threshold["clusterStrategy"].update({"memoryEvictThresholdPercent": 3, "memoryEvictLowerPercent": 1})
    patched = admin.patch("/api/v1/namespaces/koordinator-system/configmaps/slo-controller-config",
                          json={"data": {"resource-threshold-config": json.dumps(threshold)}},
                          headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status_code == 200, patched.text
    path = f"{PODS}/be-evicted"
    wait_for(lambda: admin.get(path).status_code == 404, "kubelet to stop and delete the evicted BE pod "
             f"(bridge log: {loop.log('bridge')})", timeout=120)
    gone = time.time()
    decision = asyncio.run(_eviction_of(loop.cluster.bootstrap, victim["metadata"]["uid"]))
    print(f"\nEviction decision ({decision['reason']}) -> kubelet reported be-evicted gone: "
          f"{gone - decision['timestamp'] / 1000:.2f}s (polled every 0.2s)")
    assert decision["reason"] == "EvictPodByNodeMemoryUsage"
    assert 0 < gone - decision["timestamp"] / 1000 < 120


async def _eviction_of(bootstrap: str, uid: str) -> dict:
    """The Eviction decision about pod ``uid`` on the decisions topic."""
    consumer = kafka.consumer(bootstrap, [load_topology().names()["decisions"]], group_id=None, from_beginning=True)
    await consumer.start()
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=500)).values():
                for message in messages:
                    name, value = codec.decode(message.value)
                    if name == "Eviction" and value["pod"]["uid"] == uid:
                        return value
    finally:
        await consumer.stop()
    raise AssertionError(f"no Eviction decision about pod {uid} on the decisions topic")


def test_an_lse_pod_gets_its_cpuset_in_the_real_container_and_the_delay_from_container_start(loop, admin, node):
    """koordstream's scheduler pins an LSE pod to CPUs (``resource-status``); the stream's CPUSet plan reaches
    the node agent, which writes the set into the pod's cgroups kubelet created. Measured: from the
    pod's and the container's cgroup appearing to their ``cpuset.cpus`` holding the pinned set. The plan comes
    before kubelet makes the pod's cgroup; containerd 1.6 has no NRI, so the agent applies the refused
    actuation again when the cgroup appears (``node_agent/actuator/waiting.py``)."""
    ensure_config(admin)
    body = koord_pod("lse-pinned", "sleep 3600", {"requests": {"cpu": "1", "memory": "64Mi"},
                                                  "limits": {"cpu": "1", "memory": "64Mi"}}, "LSE")
    response = admin.post(PODS, json=body)
    assert response.status_code == 201, response.text
    uid = response.json()["metadata"]["uid"]
    pod_dir = Path("/sys/fs/cgroup/cpuset", CGROUP_ROOT, "kubepods", f"pod{uid}")
    appeared = applied = pod_appeared = pod_applied = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and applied is None:
        if pod_appeared is None and pod_dir.is_dir():
            pod_appeared = time.monotonic()
        containers = [d for d in pod_dir.glob("*") if d.is_dir()] if pod_dir.is_dir() else []
        status = admin.get(f"{PODS}/lse-pinned").json()
        pinned = json.loads(status["metadata"].get("annotations", {}).get(
            "scheduling.koordinator.sh/resource-status", "{}")).get("cpuset")
        running = status["status"].get("containerStatuses", [{}])[0].get("containerID", "").removeprefix(
            "containerd://")
        main = pod_dir / running if running else None
        if appeared is None and main is not None and main.is_dir():
            appeared = time.monotonic()
        if pod_applied is None and pinned and pod_dir.is_dir() and \
                (pod_dir / "cpuset.cpus").read_text().strip() == pinned:
            pod_applied = time.monotonic()
        if appeared is not None and pinned and (main / "cpuset.cpus").read_text().strip() == pinned:
            applied = time.monotonic()
        time.sleep(0.05)
    assert applied is not None, (f"the LSE container's cpuset never became the pinned set {pinned}: pod status "
                                 f"{status['status']}, annotations {status['metadata'].get('annotations')}, "
                                 f"containers {containers}; acks {_acks(loop)}")
    print(f"\nLSE pod cpuset.cpus {pinned}: in the pod cgroup {pod_applied - pod_appeared:.2f}s after kubelet made it, "
          f"in the container's {applied - appeared:.2f}s after its cgroup appeared (sampled every 0.05s plus an "
          "API read)")


def _acks(loop: Loop) -> list:
    """The ActuationAcks of the read model (what the node agent applied, refused or could not do)."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from state.db import open_database
    from state.models import ActuationAck

    with Session(open_database(loop.cluster.env["KOORD_DATABASE_URL"])) as session:
        return [(row.actuation_id, row.values, row.applied, row.error)
                for row in session.scalars(select(ActuationAck)).all()]
