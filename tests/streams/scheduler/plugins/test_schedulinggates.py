"""SchedulingGates: kube-scheduler v1.34's ``TestPreEnqueue`` cases, and a gated pod through the domain: it is not
attempted until an update removes its gates, and a restored domain still holds it back."""

import pytest

from streams.scheduler.domain import SchedulingDomain
from streams.scheduler.framework import Code
from streams.scheduler.plugins.schedulinggates import NAME
from tests.streams.scheduler.support import converted, decisions, node, plugin_of, pod_info, run


def gated(name: str, *gates: str, ts: int = 1000):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    return converted({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                                     "uid": f"uid-{name}"}, "spec": spec}, ts=ts)


@pytest.mark.parametrize("gates, code, message", [
    pytest.param((), Code.SUCCESS, None, id="pod does not carry scheduling gates"),
    pytest.param(("foo",), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates: [foo]",
                 id="pod carrying scheduling gates"),
    pytest.param(("foo", "bar"), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates: [foo bar]",
                 id="pod carrying two scheduling gates, in their order"),
])
def test_TestPreEnqueue(gates, code, message):
    domain, _ = run(node("n1"))
    status = plugin_of(domain, NAME).pre_enqueue(pod_info(gated("p", *gates)))
    assert status.code == code and (message is None or status.reasons == (message,))


def test_a_gated_pod_waits_until_an_update_removes_its_gates_also_across_a_restore():
    domain, out = run(node("n1"), gated("p", "example.com/quota"))
    assert decisions(out)[-1]["result"] == "Unschedulable"
    assert decisions(out)[-1]["message"] == "waiting for scheduling gates: [example.com/quota]."
    restored = SchedulingDomain.restore("default", domain.entries())
    _, out = run(gated("p", "example.com/quota", ts=2000), domain=restored)
    assert [d["result"] for d in decisions(out)] in ([], ["Unschedulable"])
    _, out = run(gated("p", ts=3000), domain=restored)
    assert decisions(out)[-1]["result"] == "Scheduled" and decisions(out)[-1]["nodeName"] == "n1"
