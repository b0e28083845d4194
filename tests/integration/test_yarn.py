"""Issue 42 against a real Hadoop YARN: a ResourceManager and two NodeManagers (``koord yarn``), the YARN bridge
and the pipeline on the real broker.

Two Kubernetes nodes, each with one NodeManager (``koord yarn-bridge --node``). After a NodeMetric shows
idle prod usage, each NodeManager's total on the ResourceManager is the node's batch allocatable in YARN's
units (yarn-copilot's ``calculate``) within one update period; containers YARN allocates come off the
batch allocatable the scheduler sees, so a BE pod that would overlap them is refused and one that fits is
placed, and the NodeManager's total then leaves room for that pod. One ResourceManager per session; the
tests run in the Tansu round only (``scenario``).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from streams import supervision
from streams.yarn import cluster as yarn_cluster
from streams.yarn import jars
from streams.yarn.hold import Hold
from streams.yarn.resourcemanager import list_node_managers, update_node_resource, UpdateRefused
from streams.maven import MissingPrerequisite
from tests.integration.manifests import COLOCATION_CONFIG

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

NODES = ("yarn-node-0", "yarn-node-1")
NAMESPACE = "yarn-e2e"
MIB = 1024 * 1024
UPDATE_PERIOD_S = 60.0
"""How long the test waits for an update: a pod change reaches the node's NodeManager total at the node's next
calculation (a Tick, every 10 s, or a NodeMetric), the bridge reads it within its round (0.5 s here) and
writes at most every second (the flags below); the rest is the pipeline and a JVM start for ``rmadmin``
on a loaded 2-core machine."""


@pytest.fixture(scope="session")
def yarn(tmp_path_factory):
    """A ResourceManager and two NodeManagers for the session. Without Java or Maven the tests skip with the
    reason, unless ``KOORD_REQUIRE_KAFKA`` is set (``make test``; the same Java tier): then they fail."""
    try:
        jars.yarn_libs()
    except MissingPrerequisite as error:
        if os.environ.get("KOORD_REQUIRE_KAFKA"):
            pytest.fail(f"{error}; KOORD_REQUIRE_KAFKA is set, so this is a failure, not a skip")
        pytest.skip(str(error))
    running = yarn_cluster.YarnCluster(tmp_path_factory.mktemp("yarn"))
    state = running.start(node_managers=2, memory_mb=4096, vcores=4)
    try:
        yield state
    finally:
        running.stop()


@pytest.fixture(scope="module")
def bridged(cluster, yarn):
    """The two nodes with an idle NodeMetric, and the YARN bridge mapping one NodeManager to each."""
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=COLOCATION_CONFIG)
    for name in NODES:
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60",
                      input=_node(name))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for name in NODES:
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=_idle_metric(name, now))
    mapping = [arg for node_id, node in zip(yarn["nodes"], NODES) for arg in ("--node", f"{node_id}={node}")]
    bridge = supervision.spawn(supervision.koord_command(
        "yarn-bridge", "--rm", yarn["rm"], "--rm-admin", yarn["admin"], *mapping, "--poll-interval", "0.5",
        "--min-update-interval", "1"), cluster.home / "yarn-bridge.log", cluster.env)
    try:
        yield dict(zip(yarn["nodes"], NODES))
    finally:
        supervision.stop([bridge])


def _node(name: str) -> str:
    """8 cores and 16 GiB, labelled with its name, tainted so that only this module's pods land on it."""
    resources = '{cpu: "8", memory: 16Gi, pods: "110"}'
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{e2e-scenario: yarn, yarn-e2e/node: {name}}}}}
spec: {{taints: [{{key: e2e-scenario, value: yarn, effect: NoSchedule}}]}}
status: {{capacity: {resources}, allocatable: {resources}}}
"""


def _metric(name: str, update_time: str, node_usage: str, pods: str = "[]") -> str:
    """A NodeMetric of ``name``: the node's usage (``{cpu: ..., memory: ...}``), 500m/1Gi of it the system's,
    and ``pods`` as its podsMetric (YAML)."""
    return f"""\
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: {name}}}
status:
  updateTime: "{update_time}"
  nodeMetric:
    nodeUsage: {{resources: {node_usage}}}
    systemUsage: {{resources: {{cpu: 500m, memory: 1Gi}}}}
  podsMetric: {pods}
"""


def _idle_metric(name: str, update_time: str) -> str:
    return _metric(name, update_time, '{cpu: "1", memory: 2Gi}')


def _batch(cluster, node: str) -> tuple[int, int]:
    allocatable = cluster.koord_json("get", "nodes", node)["status"]["allocatable"]
    return int(allocatable.get("kubernetes.io/batch-cpu", 0)), _bytes(allocatable.get("kubernetes.io/batch-memory", "0"))


def _bytes(text: str) -> int:
    from streams.objects.quantity import to_canonical

    return to_canonical("memory", text)


def _yarn_units(cpu: int, memory: int) -> tuple[int, int]:
    """yarn-copilot's ``calculate``: ScaledValue(Kilo) of batch-cpu, ScaledValue(Mega) of batch-memory."""
    return math.ceil(cpu / 1000), math.ceil(memory / 10**6)


def _totals(yarn) -> dict[str, tuple[int, int]]:
    return {nm.node_id: (nm.capacity_vcores, nm.capacity_memory_mb) for nm in list_node_managers(yarn["rm"])}


def _wait(condition, what: str, timeout: float = UPDATE_PERIOD_S):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.5)


def test_each_nodemanagers_total_is_its_nodes_batch_allocatable(cluster, yarn, bridged):
    expected = {}
    for node_id, node in bridged.items():
        cpu, memory = _batch(cluster, node)
        assert cpu == 8000 - 2800 - 500 and memory > 0
        expected[node_id] = _yarn_units(cpu, memory)
    _wait(lambda: _totals(yarn) == expected, f"the NodeManagers' totals {_totals(yarn)} become {expected}")


def test_yarn_containers_and_be_pods_share_the_batch_pool(cluster, yarn, bridged):
    node_id, node = next(iter(bridged.items()))
    origin_cpu, origin_memory = _batch(cluster, node)
    with Hold(Path(yarn["conf"]), containers=2, memory_mb=1024, vcores=1) as hold:
        held = {nm: hold.node_ids.count(nm) for nm in set(hold.node_ids)}
        on_node = held.get(node_id, 0)
        expected = (origin_cpu - on_node * 1000, origin_memory - on_node * 1024 * MIB)
        _wait(lambda: _batch(cluster, node) == expected,
              f"{node}'s batch allocatable {_batch(cluster, node)} becomes {expected} with {on_node} containers")
        free_cpu = expected[0]
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60",
                      input=_be_pod("too-big", node, free_cpu + 1000, 512 * MIB))
        too_big = cluster.koord_json("get", "pods", "too-big", "-n", NAMESPACE)
        assert not too_big["spec"].get("nodeName"), too_big
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=_be_pod("fits", node, 1000, 512 * MIB))
        fits = cluster.koord_json("get", "pods", "fits", "-n", NAMESPACE)
        assert fits["spec"].get("nodeName") == node, fits
        total = _yarn_units(origin_cpu - 1000, origin_memory - 512 * MIB)
        _wait(lambda: _totals(yarn)[node_id] == total,
              f"{node_id}'s total {_totals(yarn)[node_id]} leaves room for the BE pod: {total}")
    for name in ("too-big", "fits"):
        cluster.koord("delete", "pod", name, "-n", NAMESPACE, "--wait")


def test_an_update_yarn_refuses_names_yarns_reason(yarn):
    with pytest.raises(UpdateRefused, match="unrecognized node: nosuch:1"):
        update_node_resource(Path(yarn["conf"]), "nosuch:1", 1024, 1)


def _node_manager_containers(yarn, node_id: str) -> dict[str, dict]:
    """The containers a NodeManager reports on its own REST API (``ws/v1/node/containers``), by id."""
    request = urllib.request.Request(f"{yarn['rm']}/ws/v1/cluster/nodes", headers={"Accept": "application/json"})
    nodes = json.load(urllib.request.urlopen(request, timeout=10))["nodes"]
    nodes = nodes["node"] if isinstance(nodes, dict) else nodes
    [address] = [n["nodeHTTPAddress"] for n in nodes if n.get("id", n.get("nodeId")) == node_id]
    request = urllib.request.Request(f"http://{address}/ws/v1/node/containers", headers={"Accept": "application/json"})
    containers = (json.load(urllib.request.urlopen(request, timeout=10)) or {}).get("containers") or {}
    containers = containers.get("container", []) if isinstance(containers, dict) else containers
    return {c["id"]: c for c in containers}


def _running(yarn, hold: Hold) -> bool:
    return all(_node_manager_containers(yarn, node_id).get(cid, {}).get("state") == "RUNNING"
               for cid, node_id in zip(hold.container_ids, hold.node_ids))


def _prod_pod(node: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: prod-web, namespace: {NAMESPACE}, labels: {{koordinator.sh/qosClass: LS}}}}
spec:
  nodeName: {node}
  priorityClassName: koord-prod
  priority: 9000
  tolerations: [{{key: e2e-scenario, operator: Exists, effect: NoSchedule}}]
  containers:
  - {{name: main, image: web, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
"""


def _busy_metric(name: str, update_time: str) -> str:
    return _metric(name, update_time, '{cpu: "4", memory: 6Gi}',
                   f'[{{namespace: {NAMESPACE}, name: prod-web, podUsage: {{resources: {{cpu: "3", memory: 4Gi}}}}}}]')


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_rising_prod_usage_shrinks_the_nodemanagers_total_while_a_yarn_application_runs(cluster, yarn, bridged):
    """A YARN application's containers run (``sleep`` launched by the NodeManagers); then a prod pod's usage
    rises on the node of the first one: the node's batch allocatable drops, and on the next update the
    NodeManager's total is the node's new batch capacity in YARN's units (batch allocatable + what YARN holds,
    no BE pods), smaller than before, while the containers keep running."""
    with Hold(Path(yarn["conf"]), containers=2, memory_mb=1024, vcores=1) as hold:
        _wait(lambda: _running(yarn, hold), f"the NodeManagers report {hold.container_ids} RUNNING")
        node_id = hold.node_ids[0]
        node = bridged[node_id]
        on_node = hold.node_ids.count(node_id)
        held = (on_node * 1000, on_node * 1024 * MIB)

        def in_step():
            cpu, memory = _batch(cluster, node)
            total = _yarn_units(cpu + held[0], memory + held[1])
            nm = {n.node_id: n for n in list_node_managers(yarn["rm"])}[node_id]
            synced = nm.allocated_vcores == on_node and (nm.capacity_vcores, nm.capacity_memory_mb) == total
            return (cpu, memory, total) if synced else None
        before_cpu, _, before_total = _wait(in_step, f"{node_id}'s total is its node's batch capacity")
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=_prod_pod(node))
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=_busy_metric(node, _now()))
        try:
            after_cpu, _, after_total = _wait(lambda: (found := in_step()) and found[0] < before_cpu and found,
                                              f"{node}'s batch allocatable drops below {before_cpu} and "
                                              f"{node_id}'s total follows")
            print(f"\n{node}: batch-cpu {before_cpu} -> {after_cpu} with {on_node} YARN containers; "
                  f"NodeManager total {before_total} -> {after_total}")
            assert after_total[0] < before_total[0] and after_total[0] >= on_node
            assert _running(yarn, hold), "the YARN containers stopped while the NodeManager shrank"
        finally:
            cluster.koord("delete", "pod", "prod-web", "-n", NAMESPACE, "--wait")
            cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=_idle_metric(node, _now()))


def _pids_in(directory_name: str) -> list[int]:
    """Processes whose working directory is a YARN container's (the NodeManager starts them there)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd").rstrip("/").endswith("/" + directory_name):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _moved(directory_name: str, procs: Path) -> bool:
    """Move a YARN container's processes into a cgroup; true once every one still running is in it. A process
    of the launch script may end between the listing and the move (ESRCH): it has nothing left to move."""
    pids = _pids_in(directory_name)
    for pid in pids:
        try:
            procs.write_text(str(pid))
        except ProcessLookupError:
            continue
    inside = {int(line) for line in procs.read_text().split()}
    running = set(_pids_in(directory_name))
    return bool(running) and running <= inside


@pytest.mark.real_cgroups
def test_memory_eviction_kills_a_running_yarn_container_and_yarn_frees_it(yarn, tmp_path):
    """Two containers of a YARN application run ``sleep`` under their NodeManagers; the test moves each one's
    processes into its cgroup under a test ``<kubepods>/besteffort/hadoop-yarn`` on the real v1 hierarchies (what
    the NodeManager's cgroups handler does with the LinuxContainerExecutor, a native binary the Maven jars do not
    ship). The node agent's memory eviction (on a ``/proc/meminfo`` showing 75 % used, threshold 70 %) kills the
    newest container that is not number 1; its NodeManager reports it ended, the ResourceManager frees its
    allocation, and container 1 runs on."""
    from node_agent.actuator.protection import ConfigStore
    from node_agent.collectors.cgroups import CgroupLayout
    from node_agent.yarnqos import YarnQoS
    from tests.node_agent.real_cgroups import ROOT, remove, require_root, require_writable
    from tests.streams.noderesource.support import configmap

    require_root("create cgroups and move the YARN containers' processes")
    hierarchies = [ROOT / "cpu", ROOT / "cpuacct", ROOT / "memory"]
    for hierarchy in hierarchies:
        require_writable(hierarchy)
    kubepods = f"kpyarn{os.urandom(5).hex()}"
    created: list[Path] = []
    with Hold(Path(yarn["conf"]), containers=2, memory_mb=512, vcores=1) as hold:
        _wait(lambda: _running(yarn, hold), f"the NodeManagers report {hold.container_ids} RUNNING")
        first, newest = sorted(hold.container_ids)
        node_of = dict(zip(hold.container_ids, hold.node_ids))
        allocated_before = {n.node_id: n.allocated_vcores for n in list_node_managers(yarn["rm"])}
        try:
            for cid in (first, newest):
                _wait(lambda: _pids_in(cid), f"the processes of {cid}")
                for hierarchy in hierarchies:
                    path = hierarchy
                    for part in (kubepods, "besteffort", "hadoop-yarn", cid):
                        path = path / part
                        if not path.exists():
                            path.mkdir()
                            created.append(path)
                    _wait(lambda: _moved(cid, path / "cgroup.procs"), f"{cid}'s running processes in {path}")
            proc = tmp_path / "proc"
            proc.mkdir()
            (proc / "meminfo").write_text(f"MemTotal: {16 << 20} kB\nMemFree: {2 << 20} kB\n"
                                          f"MemAvailable: {4 << 20} kB\n")
            configs = ConfigStore(None)
            assert configs.put(configmap(**{"resource-threshold-config": json.dumps(
                {"clusterStrategy": {"enable": True, "memoryEvictThresholdPercent": 70}})}))
            layout = CgroupLayout.detect(ROOT, kubepods, "cgroupfs", "v1")
            qos = YarnQoS(layout, "hadoop-yarn", tmp_path / "no-resctrl", proc, "usageWithoutPageCache", configs,
                          lambda: {})
            assert [k.container_id for k in qos.tick()] == [newest]
            _wait(lambda: _node_manager_containers(yarn, node_of[newest]).get(newest, {}).get("state")
                  in (None, "COMPLETE"), f"{newest} ends on its NodeManager")
            freed = node_of[newest]
            _wait(lambda: {n.node_id: n.allocated_vcores for n in list_node_managers(yarn["rm"])}[freed]
                  == allocated_before[freed] - 1, f"the ResourceManager frees {newest}'s vcore on {freed}")
            assert _node_manager_containers(yarn, node_of[first])[first]["state"] == "RUNNING"
        finally:
            for cid in (first, newest):
                for pid in _pids_in(cid):
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
    leftovers = remove(created)
    assert not leftovers, f"test cgroups left behind: {leftovers}"


def _be_pod(name: str, node: str, batch_cpu: int, batch_memory: int) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NAMESPACE}, labels: {{koordinator.sh/qosClass: BE}}}}
spec:
  priorityClassName: koord-batch
  priority: 5000
  nodeSelector: {{yarn-e2e/node: {node}}}
  tolerations: [{{key: e2e-scenario, operator: Exists, effect: NoSchedule}}]
  containers:
  - name: main
    image: batch
    resources:
      requests: {{kubernetes.io/batch-cpu: "{batch_cpu}", kubernetes.io/batch-memory: "{batch_memory}"}}
      limits: {{kubernetes.io/batch-cpu: "{batch_cpu}", kubernetes.io/batch-memory: "{batch_memory}"}}
"""


def test_explain_node_shows_the_yarn_share(cluster, bridged):
    node_id, node = next(iter(bridged.items()))
    shown = cluster.koord("explain", "node", node).stdout
    assert f"YARN NodeManager {node_id}: holds " in shown, shown


def test_replay_of_the_yarn_nodes_reproduces_every_node_resource(cluster, bridged):
    for node in bridged.values():
        result = cluster.koord("replay", "node", "--node", node, "-o", "json", check=False, timeout=120)
        report = json.loads(result.stdout)
        total = report["total"]
        assert (total["diverged"], total["missing"], total["extra"], total["conflicting"]) == (0, 0, 0, 0), report
        assert report["outputs"]["NodeResource"]["reproduced"] >= 3
        assert report["ok"]


def test_a_bridge_whose_resourcemanager_is_down_keeps_running_backs_off_and_says_so(cluster, tmp_path):
    """Its own KOORD_HOME, so its status file is not the session bridge's; ``koord status`` prints the YARN line."""
    from streams.broker.kraft import free_ports

    [port] = free_ports(1)
    env = {**cluster.env, "KOORD_HOME": str(tmp_path / "home")}
    log = tmp_path / "yarn-bridge-down.log"
    bridge = supervision.spawn(supervision.koord_command(
        "yarn-bridge", "--rm", f"http://127.0.0.1:{port}", "--poll-interval", "0.2"), log, env)
    try:
        _wait(lambda: log.exists() and log.read_text().count("unreachable") >= 3,
              "three failed rounds are logged", timeout=60)
        assert bridge.poll() is None, log.read_text()
        retries = [float(line.rsplit("retrying in ", 1)[1].split(" s")[0]) for line in log.read_text().splitlines()
                   if "retrying in" in line]
        assert retries[:3] == [0.2, 0.4, 0.8], retries
        shown = subprocess.run([sys.executable, "-m", "streams.cli", "status"], capture_output=True, text=True,
                               env={**os.environ, **env}, timeout=90).stdout
        line = next(line for line in shown.splitlines() if line.startswith("YARN: "))
        assert f"ResourceManager http://127.0.0.1:{port} UNREACHABLE, last sync never, 0 NodeManagers" in line
        assert "unreachable" in line.split("last error", 1)[1], line
    finally:
        supervision.stop([bridge])


def test_up_with_yarn_runs_the_bridge_and_status_shows_the_resourcemanager(tmp_path, yarn):
    """``koord up --yarn`` on a home of its own: the bridge is a supervised child, ``koord status`` says the
    ResourceManager is reachable, both NodeManagers are seen and the unmapped one is reported."""
    from tests.integration.embedded import fresh_env, koord

    mapped, unmapped = yarn["nodes"]
    env = fresh_env(tmp_path / "home")
    koord(env, "up", "--detach", "--nodes", "0", "--yarn", yarn["rm"], "--yarn-admin", yarn["admin"],
          "--yarn-node", f"{mapped}=yarn-up-node")
    try:
        def seen():
            status = json.loads(koord(env, "status", "-o", "json").stdout)
            return status if (status["yarn"] or {}).get("node_managers") == 2 else None
        status = _wait(seen, "the YARN bridge's status names both NodeManagers")
        assert status["processes"]["yarn-bridge"]["alive"]
        assert status["yarn"]["reachable"] and status["yarn"]["unknown"] == [unmapped]
        line = next(line for line in koord(env, "status").stdout.splitlines() if line.startswith("YARN: "))
        assert f"ResourceManager {yarn['rm']} reachable" in line and f"on no known node: {unmapped}" in line, line
    finally:
        koord(env, "down", check=False)
