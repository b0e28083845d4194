"""NVIDIA GPUs through NVML, when the optional ``nvidia-ml-py`` package and a driver are present.

Without the package, without libnvidia-ml, or with no GPU, ``discover`` returns
no GPU and ``usage`` an empty map: NVML errors of any kind are caught here, so
a broken driver never stops the agent. The values follow koordlet's GPU device
collector: per GPU its UUID, minor number, memory, model, PCI bus id and NUMA
node; usage is the SM utilisation (percent, ``koordinator.sh/gpu-core``) and
used memory (bytes, ``koordinator.sh/gpu-memory``).
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from pathlib import Path
from types import ModuleType

from node_agent.collectors import pci

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class GPU:
    uuid: str
    minor: int
    memory_total: int
    model: str
    bus_id: str
    """PCI address with a 4-digit domain, lower case (``0000:3b:00.0``)."""
    numa_node: int
    pcie_root: str


@dataclasses.dataclass(frozen=True, slots=True)
class GPUUsage:
    core_percent: int
    memory_used: int


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def normalize_bus_id(bus_id: str) -> str:
    """NVML writes an 8-digit PCI domain ("00000000:3B:00.0"); sysfs uses 4 ("0000:3b:00.0")."""
    domain, sep, rest = bus_id.strip().lower().partition(":")
    return f"{domain[-4:].rjust(4, '0')}:{rest}" if sep else bus_id.lower()


class NVML:
    """A session with NVML; every method degrades to "no GPU" on any error."""

    def __init__(self, sys_root: Path = Path("/sys"), module: ModuleType | None = None) -> None:
        self._sys_root = sys_root
        self._nvml = module if module is not None else _import_pynvml()
        self._ready = False
        self.driver_version = ""
        if self._nvml is None:
            return
        try:
            self._nvml.nvmlInit()
            self._ready = True
            self.driver_version = _text(self._nvml.nvmlSystemGetDriverVersion())
        except Exception as err:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
            log.info("NVML not usable, no GPU reported: %s", err)

    @property
    def available(self) -> bool:
        return self._ready

    def discover(self) -> list[GPU]:
        if not self._ready:
            return []
        gpus = []
        try:
            for index in range(self._nvml.nvmlDeviceGetCount()):
                handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
                bus_id = normalize_bus_id(_text(self._nvml.nvmlDeviceGetPciInfo(handle).busId))
                gpus.append(GPU(
                    uuid=_text(self._nvml.nvmlDeviceGetUUID(handle)),
                    minor=int(self._nvml.nvmlDeviceGetMinorNumber(handle)),
                    memory_total=int(self._nvml.nvmlDeviceGetMemoryInfo(handle).total),
                    model=_text(self._nvml.nvmlDeviceGetName(handle)),
                    bus_id=bus_id,
                    numa_node=pci.numa_node(self._sys_root, bus_id),
                    pcie_root=pci.pcie_root(self._sys_root / "bus/pci/devices" / bus_id),
                ))
        except Exception as err:
            log.warning("NVML device discovery failed, no GPU reported: %s", err)
            return []
        return sorted(gpus, key=lambda g: g.minor)

    def usage(self) -> dict[str, GPUUsage]:
        """UUID -> current usage; GPUs that fail to answer are left out."""
        if not self._ready:
            return {}
        result = {}
        try:
            count = self._nvml.nvmlDeviceGetCount()
        except Exception:
            return {}
        for index in range(count):
            try:
                handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
                result[_text(self._nvml.nvmlDeviceGetUUID(handle))] = GPUUsage(
                    core_percent=int(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                    memory_used=int(self._nvml.nvmlDeviceGetMemoryInfo(handle).used))
            except Exception:
                continue
        return result

    def close(self) -> None:
        if self._ready:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._ready = False


def model_label(models: list[str]) -> str:
    """koordlet's gpu-model label: one model for all GPUs, "NVIDIA " trimmed, spaces as "-"; "" when mixed."""
    if not models or any(not m for m in models) or len(set(models)) != 1:
        return ""
    return models[0].removeprefix("NVIDIA ").replace(" ", "-")


def _import_pynvml() -> ModuleType | None:
    try:
        return importlib.import_module("pynvml")
    except Exception:  # ImportError, or a broken install raising anything at import
        return None
