"""NodePorts under kube-scheduler v1.34's ``TestNodePorts`` and ``TestFits`` cases: the node holds one pod
with the existing ports, the incoming pod wants its own."""

import numpy as np
import pytest

from streams.scheduler.framework import SKIP, Code, CycleState
from streams.scheduler.plugins.nodeports import NAME, REASON
from tests.streams.scheduler.support import decisions, k8s_pod, node, plugin_of, pod_info, run


def ports(*infos: str) -> list[dict]:
    """Container ports from "PROTOCOL/hostIP/hostPort", as the Go tests' ``newPod`` builds them."""
    out = []
    for info in infos:
        protocol, ip, port = info.split("/")
        out.append({"protocol": protocol, "hostIP": ip, "hostPort": int(port), "containerPort": int(port)})
    return out


def with_ports(name: str, *infos: str, node_name: str | None = None, sidecar: bool | None = None):
    if sidecar is None:
        return k8s_pod(name, node_name=node_name, containers=[{"name": "c", "ports": ports(*infos)}])
    init = {"name": "init", "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}],
            **({"restartPolicy": "Always"} if sidecar else {})}
    return k8s_pod(name, node_name=node_name, init_containers=[init])


def outcome(incoming, existing: tuple[str, ...]) -> str:
    """"skip", "fits" or the failure reason of the incoming pod on m1, which holds a pod with ``existing``."""
    domain, _ = run(node("m1"), with_ports("existing", *existing, node_name="m1"))
    plugin = plugin_of(domain, NAME)
    state, info = CycleState(), pod_info(incoming)
    if plugin.pre_filter(state, info) == SKIP:
        return "skip"
    result = plugin.filter(state, info, np.ones(1, dtype=bool))
    assert result.code == Code.UNSCHEDULABLE
    return "fits" if result.passed[0] else next(reason for reason, mask in result.reasons if mask[0])


@pytest.mark.parametrize("incoming, existing, expected", [
    pytest.param(k8s_pod("p"), (), "skip", id="skip filter"),
    pytest.param(with_ports("p", "UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/9090",), "fits", id="other port"),
    pytest.param(with_ports("p", "UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",), REASON, id="same udp port"),
    pytest.param(with_ports("p", "TCP/127.0.0.1/8080"), ("TCP/127.0.0.1/8080",), REASON, id="same tcp port"),
    pytest.param(with_ports("p", "TCP/127.0.0.1/8080"), ("TCP/127.0.0.2/8080",), "fits", id="different host ip"),
    pytest.param(with_ports("p", "UDP/127.0.0.1/8080"), ("TCP/127.0.0.1/8080",), "fits", id="different protocol"),
    pytest.param(with_ports("p", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",), REASON,
                 id="second udp port conflict"),
    pytest.param(with_ports("p", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
                 ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"), REASON, id="first tcp port conflict"),
    pytest.param(with_ports("p", "TCP/0.0.0.0/8001"), ("TCP/127.0.0.1/8001",), REASON,
                 id="first tcp port conflict due to 0.0.0.0 hostIP"),
    pytest.param(with_ports("p", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), ("TCP/127.0.0.1/8001",), REASON,
                 id="TCP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(with_ports("p", "TCP/127.0.0.1/8001"), ("TCP/0.0.0.0/8001",), REASON,
                 id="second tcp port conflict to 0.0.0.0 hostIP"),
    pytest.param(with_ports("p", "UDP/127.0.0.1/8001"), ("TCP/0.0.0.0/8001",), "fits", id="second different protocol"),
    pytest.param(with_ports("p", "UDP/127.0.0.1/8001"), ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"), REASON,
                 id="UDP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(with_ports("p", sidecar=False), ("TCP/0.0.0.0/8001",), "skip",
                 id="non-sidecar initContainer using hostPort"),
    pytest.param(with_ports("p", sidecar=True), ("TCP/0.0.0.0/8001",), REASON,
                 id="TCP hostPort conflict from sidecar initContainer"),
])
def test_TestNodePorts(incoming, existing, expected):
    assert outcome(incoming, existing) == expected


@pytest.mark.parametrize("wanted, existing, fits", [
    pytest.param(("TCP/127.0.0.1/80",), ("TCP/127.0.0.1/9090",), True, id="non-conflicting ports"),
    pytest.param(("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
                 ("TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"), True,
                 id="multiple non-conflicting ports"),
    pytest.param(("TCP/127.0.0.1/80",), ("UDP/127.0.0.1/80",), True, id="same ports on different protocols"),
    pytest.param(("TCP/127.0.0.1/80",), ("TCP/127.0.0.1/80",), False, id="conflicting ports"),
    pytest.param(("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
                 ("TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"), False,
                 id="multiple ports, some conflicting"),
])
def test_TestFits(wanted, existing, fits):
    assert (outcome(with_ports("p", *wanted), existing) == "fits") == fits


def test_a_second_replica_with_the_same_host_port_goes_to_another_node_then_waits():
    _, out = run(node("n1"), node("n2"), *(with_ports(f"web-{i}", "TCP/0.0.0.0/80") for i in range(3)))
    placed = decisions(out)
    assert sorted(d["nodeName"] for d in placed if d["result"] == "Scheduled") == ["n1", "n2"]
    assert placed[-1]["message"] == (f"0/2 nodes are available: 2 {REASON}. preemption: 0/2 nodes are available: "
                                     "2 No preemption victims found for incoming pod.")
