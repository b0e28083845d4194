"""The node-QoS strategy registry: name -> factory (a name registered twice raises), and the order plans run in.

Order (``ORDER``) and why:

1. CPUSuppress — writes ``qos/BE`` quota or cpuset; first, as koordlet's suppress loop owns BE's cpu limit.
   Its BE cpuset and CPUSet's pools read the same pinned cpusets, so neither depends on the other's output.
2. CPUSet — pod ``cpuset.cpus`` (pinned cpuset or LS share pool) and a pinned pod's quota -1; right after
   suppress so the CPU placement of every class is planned (and emitted) before the per-pod CPU settings,
   and before CPUBurst so that, on an LS pod that also has a cpuset, a scaled burst quota wins over the
   unset one as koordlet's burst reconciler overrides what the cpuset hook wrote at container creation.
3. CPUBurst — pod ``cpu.cfs_burst_us`` / ``cpu.cfs_quota_us`` of LS pods; independent of suppress.
4. CgroupIdle — bvt / cpu.idle / core-sched cookies; after the ones above because it adds settings to the
   same ``qos/BE`` cgroup target, and merging keeps every strategy's setting names.
5. Resctrl, 6. NetQoS — other mechanisms, order-free.
7. HostApps — host applications get the LS/BE treatment computed from the same class settings.
8. MemoryEvict, 9. CPUEvict — evictions last: koordlet runs BEMemoryEvict before BECPUEvict, and a pod
   picked by the first is not picked again by the second.
"""

from __future__ import annotations

from collections.abc import Mapping

from streams import registries
from streams.nodeqos.plugins import (
    cgroupidle, cpuburst, cpuevict, cpuset, cpusuppress, hostapps, memoryevict, netqos, resctrl,
)

REGISTRY = registries.make_registry([
    (cpusuppress.NAME, cpusuppress.CPUSuppress),
    (cpuset.NAME, cpuset.CPUSet),
    (cpuburst.NAME, cpuburst.CPUBurst),
    (cgroupidle.NAME, cgroupidle.CgroupIdle),
    (resctrl.NAME, resctrl.Resctrl),
    (netqos.NAME, netqos.NetQoS),
    (hostapps.NAME, hostapps.HostApps),
    (memoryevict.NAME, memoryevict.MemoryEvict),
    (cpuevict.NAME, cpuevict.CPUEvict),
], "node-QoS strategy")

ORDER = (cpusuppress.NAME, cpuset.NAME, cpuburst.NAME, cgroupidle.NAME, resctrl.NAME, netqos.NAME, hostapps.NAME,
         memoryevict.NAME, cpuevict.NAME)


def build(names: tuple[str, ...] = ORDER, enabled: Mapping[str, bool] | None = None) -> tuple:
    """One instance of each named strategy (default args), in the given order; ``enabled``: strategy name ->
    its feature gate (a strategy not in it keeps its default, on). KeyError for unknown/repeated names."""
    gates = {name: {"enabled": on} for name, on in (enabled or {}).items()}
    return tuple(registries.build(REGISTRY, names, "node-QoS strategies", gates).values())
