"""RDMA devices from a fake /sys/class/infiniband: PFs only, minor, health, NUMA, PCIe root, VFs."""

import os

from node_agent.collectors.rdma import discover


def _rdma(sys_root, name, bus, ports_state=("4: ACTIVE",), numa="0", vfs=(), vf_of=None):
    pci = sys_root / "devices/pci0000:16/0000:16:02.0" / bus
    pci.mkdir(parents=True)
    (pci / "numa_node").write_text(numa + "\n")
    if vf_of:
        os.symlink(vf_of, pci / "physfn")
    for index, vf in enumerate(vfs):
        os.symlink(sys_root / "devices/pci0000:16/0000:16:02.0" / vf, pci / f"virtfn{index}")
    ib = sys_root / "class/infiniband" / name
    ib.mkdir(parents=True)
    os.symlink(pci, ib / "device")
    for port, state in enumerate(ports_state, start=1):
        (ib / "ports" / str(port)).mkdir(parents=True)
        (ib / "ports" / str(port) / "state").write_text(state + "\n")
    return pci


def test_physical_functions_with_health_numa_and_vfs(tmp_path):
    pf = _rdma(tmp_path, "mlx5_1", "0000:17:00.0", numa="1", vfs=("0000:17:00.2",))
    _rdma(tmp_path, "mlx5_0", "0000:18:00.0", ports_state=("1: DOWN",), numa="-1")
    _rdma(tmp_path, "mlx5_2", "0000:17:00.2", vf_of=pf)
    devices = discover(tmp_path)
    assert [(d.name, d.minor, d.healthy, d.numa_node, d.pcie_root) for d in devices] == [
        ("mlx5_0", 0, False, 0, "pci0000:16"), ("mlx5_1", 1, True, 1, "pci0000:16")]
    assert devices[1].virtual_functions == ("0000:17:00.2",)


def test_no_infiniband_class_means_no_device(tmp_path):
    assert discover(tmp_path) == []


def test_a_dangling_device_link_is_skipped(tmp_path):
    ib = tmp_path / "class/infiniband/mlx5_0"
    ib.mkdir(parents=True)
    os.symlink(tmp_path / "nowhere", ib / "device")
    assert discover(tmp_path) == []


def test_vfs_are_listed_in_virtfn_order_not_bus_order(tmp_path):
    vfs = [f"0000:17:{slot:02x}.{fn}" for slot, fn in ((1, 0), (0, 7), (0, 3))] + [f"0000:17:00.{i}" for i in (1, 2)]
    for bus in vfs:
        (tmp_path / "devices/pci0000:16/0000:16:02.0" / bus).mkdir(parents=True)
    _rdma(tmp_path, "mlx5_0", "0000:17:00.0", vfs=vfs * 2 + vfs[:1])  # virtfn0..virtfn10
    (device,) = discover(tmp_path)
    assert len(device.virtual_functions) == 11 and device.virtual_functions[10] == vfs[0]
    assert device.virtual_functions[:3] == tuple(vfs[:3])
