"""CPU topology and basic info from a fake sysfs: sockets, NUMA nodes, cores, SMT, HT and turbo."""

import json

import pytest

from node_agent.collectors.topology import ANNOTATION_CPU_BASIC_INFO, read_topology


def _machine(root, sockets=2, cores=2, threads=2, numa_per_socket=1):
    """Linux numbering: first threads of all cores, then their siblings."""
    total = sockets * cores
    cpus = []
    for thread in range(threads):
        for core in range(total):
            cpu = thread * total + core
            socket, local = divmod(core, cores)
            siblings = ",".join(str(t * total + core) for t in range(threads))
            topo = root / f"devices/system/cpu/cpu{cpu}/topology"
            topo.mkdir(parents=True)
            (topo / "physical_package_id").write_text(f"{socket}\n")
            (topo / "core_id").write_text(f"{local}\n")
            (topo / "thread_siblings_list").write_text(siblings + "\n")
            cpus.append((cpu, socket, socket * numa_per_socket + local * numa_per_socket // cores))
    (root / "devices/system/cpu/online").write_text(f"0-{len(cpus) - 1}\n")
    for node in {n for _, _, n in cpus}:
        path = root / f"devices/system/node/node{node}/cpulist"
        path.parent.mkdir(parents=True)
        path.write_text(",".join(str(c) for c, _, n in cpus if n == node) + "\n")
    return cpus


@pytest.mark.parametrize("sockets, cores, threads, numa, expected", [
    (1, 4, 1, 1, (1, 1, 4, 4)),
    (2, 2, 2, 1, (2, 2, 4, 8)),
    (2, 4, 2, 2, (2, 4, 8, 16)),
], ids=["one-socket-no-smt", "two-sockets-smt", "two-sockets-nps2"])
def test_counts_sockets_numa_cores_cpus(tmp_path, sockets, cores, threads, numa, expected):
    _machine(tmp_path, sockets, cores, threads, numa)
    topology = read_topology(tmp_path, tmp_path / "proc")
    assert (topology.sockets, topology.numa_nodes, topology.cores, len(topology.cpus)) == expected


def test_smt_siblings_share_a_core_and_cores_are_unique_across_sockets(tmp_path):
    _machine(tmp_path, sockets=2, cores=2, threads=2)
    cpus = {c.id: c for c in read_topology(tmp_path, tmp_path / "proc").cpus}
    assert cpus[0].core == cpus[4].core and cpus[0].siblings == (0, 4)
    assert cpus[0].core != cpus[2].core  # core_id 0 of socket 0 vs core_id 0 of socket 1


@pytest.mark.parametrize("files, ht, turbo", [
    ({"devices/system/cpu/smt/active": "1", "devices/system/cpu/intel_pstate/no_turbo": "0"}, True, True),
    ({"devices/system/cpu/smt/active": "0", "devices/system/cpu/intel_pstate/no_turbo": "1"}, False, False),
    ({"devices/system/cpu/cpufreq/boost": "1"}, True, True),
    ({"devices/system/cpu/smt/active": "garbage", "devices/system/cpu/intel_pstate/no_turbo": "x"}, True, False),
], ids=["intel-ht-turbo", "intel-off", "amd-boost-siblings", "garbage-falls-back"])
def test_hyper_threading_and_turbo(tmp_path, files, ht, turbo):
    _machine(tmp_path, sockets=1, cores=2, threads=2)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text + "\n")
    topology = read_topology(tmp_path, tmp_path / "proc")
    assert (topology.hyper_threading, topology.turbo) == (ht, turbo)


def test_basic_info_annotation_uses_koordinator_field_names_and_omitempty(tmp_path):
    _machine(tmp_path, sockets=1, cores=2, threads=2)
    (tmp_path / "devices/system/cpu/smt").mkdir()
    (tmp_path / "devices/system/cpu/smt/active").write_text("1\n")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor : 0\nvendor_id : GenuineIntel\n"
                                           "model name : Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\n"
                                           "processor : 1\nmodel name : ignored\n")
    info = json.loads(read_topology(tmp_path, tmp_path / "proc").annotations()[ANNOTATION_CPU_BASIC_INFO])
    assert info == {"cpuModel": "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "hyperThreadEnabled": True,
                    "vendorID": "GenuineIntel"}


def test_an_empty_sysfs_gives_an_empty_topology(tmp_path):
    topology = read_topology(tmp_path, tmp_path)
    assert (topology.cpus, topology.model_name, topology.hyper_threading) == ((), "", False)


def test_numa_zones_count_each_nodes_cpus_and_read_its_memtotal(tmp_path):
    _machine(tmp_path, sockets=2, cores=2, threads=2)
    for node, kib in ((0, 263856452), (1, 264221144)):
        (tmp_path / f"devices/system/node/node{node}/meminfo").write_text(
            f"Node {node} MemTotal:       {kib} kB\nNode {node} MemFree:        {kib // 2} kB\n"
            f"Node {node} HugePages_Total:     0\n")
    topology = read_topology(tmp_path, tmp_path / "proc")
    assert topology.numa_zones() == [(0, 4, 263856452 << 10), (1, 4, 264221144 << 10)]


def test_numa_zones_without_meminfo_have_no_memory_and_without_numa_directory_none(tmp_path):
    _machine(tmp_path, sockets=1, cores=2, threads=1)
    assert read_topology(tmp_path, tmp_path / "proc").numa_zones() == [(0, 2, 0)]
    assert read_topology(tmp_path / "empty", tmp_path / "proc").numa_zones() == []


POLICY = "kubelet.koordinator.sh/cpu-manager-policy"


@pytest.mark.parametrize("checkpoint, annotation", [
    pytest.param('{"policyName":"static","defaultCpuSet":"0-3","checksum":1}', '{"policy":"static"}', id="static"),
    pytest.param('{"policyName":"none","defaultCpuSet":"","checksum":2}', '{"policy":"none"}', id="none"),
    pytest.param(None, None, id="no-checkpoint"),
    pytest.param("not json", None, id="broken-checkpoint"),
])
def test_the_kubelets_cpu_manager_policy_is_published(tmp_path, checkpoint, annotation):
    """From the kubelet's cpu_manager_state; without it the annotation is left out (readers take none)."""
    sys_root, kubelet = tmp_path / "sys", tmp_path / "var/lib/kubelet"
    _machine(sys_root, 1, 2, 1)
    kubelet.mkdir(parents=True)
    if checkpoint is not None:
        (kubelet / "cpu_manager_state").write_text(checkpoint)
    assert read_topology(sys_root, tmp_path / "proc").annotations().get(POLICY) == annotation
