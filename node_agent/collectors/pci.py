"""Where a PCI device sits: its NUMA node and PCIe root complex, from ``/sys/bus/pci/devices/<bus id>``.

NUMA node from ``numa_node`` (-1, a machine without NUMA, is node 0, as
koordlet's ``getNUMANodeID`` reads it); root complex from the resolved device
path (``/sys/devices/pci0000:00/...`` -> ``pci0000:00``), "" when unknown.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from node_agent.hostfs import read_int

_PCIE_ROOT = re.compile(r"pci[0-9a-fA-F]{4}:[0-9a-fA-F]{2}")


def numa_node(sys_root: Path, bus_id: str) -> int:
    value = read_int(sys_root / "bus/pci/devices" / bus_id / "numa_node")
    return value if value is not None and value >= 0 else 0


def pcie_root(device_path: Path) -> str:
    try:
        resolved = os.path.realpath(device_path)
    except OSError:
        return ""
    match = _PCIE_ROOT.search(resolved)
    return match.group(0) if match else ""
