"""RDMA devices from sysfs (``/sys/class/infiniband``), as koordlet's RDMA collector reports them.

One device per physical function: ``<ibdev>/device`` resolves to its PCI
device; virtual functions (they have ``physfn``) are listed under their PF's
``virtfn*`` links instead. Minor: N in an ``mlx<k>_<N>`` name, else the order
of the names. Healthy when every port's ``state`` says ACTIVE
(``pkg/koordlet/util/system/rdma.go``). NUMA node from the PCI device's
``numa_node`` (-1 read as 0); PCIe root from the resolved path (``pci0000:00``).
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from node_agent.collectors import pci
from node_agent.hostfs import exists, list_dirs, read_int, read_text

_MLX_MINOR = re.compile(r"^mlx\d+_(\d+)$")


@dataclasses.dataclass(frozen=True, slots=True)
class RDMADevice:
    name: str
    bus_id: str
    minor: int
    healthy: bool
    numa_node: int
    pcie_root: str
    virtual_functions: tuple[str, ...]


def discover(sys_root: Path) -> list[RDMADevice]:
    base = sys_root / "class/infiniband"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    devices, seen = [], set()
    for order, name in enumerate(names):
        device = base / name / "device"
        try:
            resolved = Path(os.path.realpath(device))
        except OSError:
            continue
        if not exists(resolved) or exists(device / "physfn"):
            continue
        bus_id = resolved.name
        if bus_id in seen:
            continue
        seen.add(bus_id)
        match = _MLX_MINOR.match(name)
        numa = read_int(device / "numa_node")
        devices.append(RDMADevice(
            name=name, bus_id=bus_id, minor=int(match.group(1)) if match else order,
            healthy=_healthy(base / name / "ports"),
            numa_node=numa if numa is not None and numa >= 0 else 0,
            pcie_root=pci.pcie_root(device),
            virtual_functions=_virtual_functions(device)))
    return sorted(devices, key=lambda d: d.minor)


def _healthy(ports: Path) -> bool:
    names = list_dirs(ports)
    return bool(names) and all("ACTIVE" in (read_text(ports / port / "state") or "") for port in names)


def _virtual_functions(device: Path) -> tuple[str, ...]:
    """The VFs' bus ids by their ``virtfnN`` index (N is the VF's minor in the Device object)."""
    try:
        links = [entry for entry in os.listdir(device)
                 if entry.startswith("virtfn") and entry.removeprefix("virtfn").isdigit()]
    except OSError:
        return ()
    links.sort(key=lambda link: int(link.removeprefix("virtfn")))
    return tuple(Path(os.path.realpath(device / link)).name for link in links)
