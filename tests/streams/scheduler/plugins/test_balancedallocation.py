"""NodeResourcesBalancedAllocation under kube-scheduler v1.34's ``TestNodeResourcesBalancedAllocation`` cases
(those without DRA), each pod's containers summed into one request, as the score reads it."""

import numpy as np
import pytest

from streams.objects.args import ArgsError
from streams.scheduler.framework import CycleState
from streams.scheduler.plugins.balancedallocation import NAME, BalancedAllocation, BalancedAllocationArgs
from tests.streams.scheduler.support import k8s_pod, node, pod_info, run

CPU_AND_MEMORY = {"cpu": "3", "memory": "5000"}
CPU_ONLY = {"cpu": "3", "memory": "0"}
CPU_MEMORY_AND_GPU = {"cpu": "3", "memory": "5000", "nvidia.com/gpu": "3"}
GPU = {"nvidia.com/gpu": 8}
WITH_GPU = (("cpu", 1), ("memory", 1), ("nvidia.com/gpu", 1))


@pytest.mark.parametrize("request_, nodes, placed, resources, expected", [
    pytest.param({}, [("node1", 4000, 10000, None), ("node2", 4000, 10000, None)], [], None, [0, 0],
                 id="nothing scheduled, nothing requested, skip in PreScore"),
    pytest.param(CPU_AND_MEMORY, [("node1", 4000, 10000, None), ("node2", 6000, 10000, None)], [], None, [87, 100],
                 id="nothing scheduled, resources requested, differently sized nodes"),
    pytest.param(CPU_AND_MEMORY, [("node1", 10000, 20000, None), ("node2", 10000, 20000, None)],
                 [("node1", CPU_ONLY), ("node2", CPU_AND_MEMORY)], None, [82, 95],
                 id="resources requested, pods scheduled with resources"),
    pytest.param(CPU_AND_MEMORY, [("node1", 10000, 20000, None), ("node2", 10000, 50000, None)],
                 [("node1", CPU_ONLY), ("node2", CPU_AND_MEMORY)], None, [82, 80],
                 id="resources requested, pods scheduled with resources, differently sized nodes"),
    pytest.param(CPU_ONLY, [("node1", 6000, 10000, None), ("node2", 6000, 10000, None)],
                 [("node1", CPU_ONLY), ("node2", CPU_AND_MEMORY)], None, [50, 75],
                 id="requested resources at node capacity"),
    pytest.param({"memory": "0", "nvidia.com/gpu": "1"}, [("node1", 3500, 40000, GPU), ("node2", 3500, 40000, GPU)],
                 [("node2", CPU_AND_MEMORY), ("node1", CPU_MEMORY_AND_GPU)], WITH_GPU, [70, 65],
                 id="include scalar resource on a node for balanced resource allocation"),
    pytest.param(CPU_AND_MEMORY, [("node1", 3500, 40000, GPU), ("node2", 3500, 40000, None)], [], WITH_GPU, [63, 63],
                 id="node without the scalar resource should skip the scalar resource"),
])
def test_TestNodeResourcesBalancedAllocation(request_, nodes, placed, resources, expected):
    domain, _ = run(*(node(name, cpu=cpu, memory=memory, extra=extra) for name, cpu, memory, extra in nodes),
                    *(k8s_pod(f"placed-{i}", requests=requests, node_name=on) for i, (on, requests) in enumerate(placed)))
    plugin = BalancedAllocation(BalancedAllocationArgs(resources) if resources else BalancedAllocationArgs(),
                                domain.cluster)
    scores = plugin.score(CycleState(), pod_info(k8s_pod("p", requests=request_)), np.ones(len(nodes), dtype=bool))
    assert scores.tolist() == expected


def test_args_take_kube_schedulers_resources_and_check_their_weights():
    assert BalancedAllocationArgs.from_config({"resources": [{"name": "cpu", "weight": 1}, {"name": "memory"}]}) == \
        BalancedAllocationArgs((("cpu", 1), ("memory", 1)))
    with pytest.raises(ArgsError, match=f"{NAME}: resources\\[cpu\\].weight must be in \\[1, 100\\], got 0"):
        BalancedAllocationArgs((("cpu", 0),)).validate()
