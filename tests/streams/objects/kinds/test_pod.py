"""Pod: effective requests and limits, placement constraints, priority and phase."""

import pytest

from tests.streams.objects.support import SAMPLES, problems_of, record_of


def pod(spec: str, status: str = "{}") -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {spec}\nstatus: {status}\n"


def test_pod_fields():
    record = record_of(SAMPLES["Pod"]).record
    # containers: app 500m/512Mi (limit 1/1Gi) + log (limits only, so requests = limits 250m/128Mi)
    # = 750m/640Mi; init 2/1Gi is larger for cpu; overhead 100m on top.
    assert record["requests"] == {"cpu": 2100, "memory": 1 << 30}
    assert record["limits"] == {"cpu": 1350, "memory": (1 << 30) + (128 << 20)}
    assert record["schedulerName"] == "koord-scheduler"
    assert (record["priority"], record["priorityClassName"]) == (9000, "koord-prod")
    assert record["nodeSelector"] == {"kubernetes.io/arch": "amd64"}
    assert record["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule", "tolerationSeconds": None},
        {"key": None, "operator": "Exists", "value": None, "effect": "NoExecute", "tolerationSeconds": 300},
    ]
    assert (record["nodeName"], record["phase"]) == (None, "Running")


def test_bare_pod_has_defaults():
    record = record_of("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n").record
    assert record["schedulerName"] == "default-scheduler"
    assert (record["requests"], record["limits"], record["tolerations"], record["phase"]) == ({}, {}, [], None)


def test_bound_pod_keeps_node_name():
    assert record_of(pod("{nodeName: node-1}", "{phase: Succeeded}")).record["nodeName"] == "node-1"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            "{containers: [{resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]}",
            "spec.containers[0].resources.requests.cpu: must be less than or equal to cpu limit",
        ),
        ("{containers: [{resources: {requests: {cpu: 12x}}}]}", 'spec.containers[0].resources.requests.cpu: not a valid quantity: "12x"'),
        ("{containers: [{resources: {requests: {gpu thing: 1}}}]}", "spec.containers[0].resources.requests[gpu thing]: invalid resource name"),
        ("{containers: {app: {}}}", "spec.containers: must be a list, got object"),
        ("{initContainers: [{restartPolicy: Never}]}", 'spec.initContainers[0].restartPolicy: unsupported value "Never" (supported: Always)'),
        ("{overhead: {cpu: -10m}}", 'spec.overhead.cpu: quantity must not be negative: "-10m"'),
        ("{priority: 3000000000}", "spec.priority: must be between -2147483648 and 2147483647, got 3000000000"),
        ("{priority: 1.5}", "spec.priority: must be an integer, got number 1.5"),
        ("{nodeName: Node_1}", 'spec.nodeName: invalid name "Node_1"'),
        ("{schedulerName: ''}", None),
        ("{nodeSelector: {disk: true}}", "spec.nodeSelector.disk: must be a string, got boolean true (quote it)"),
        ("{tolerations: [{key: a, operator: Exists, value: b}]}", 'spec.tolerations[0].value: must be empty when operator is "Exists"'),
        ("{tolerations: [{value: b}]}", 'spec.tolerations[0].operator: must be "Exists" when key is empty (matches all keys)'),
        ("{tolerations: [{key: a, operator: In}]}", 'spec.tolerations[0].operator: unsupported value "In" (supported: Equal, Exists)'),
        (
            "{tolerations: [{key: a, effect: NoSchedule, tolerationSeconds: 5}]}",
            'spec.tolerations[0].effect: must be "NoExecute" when tolerationSeconds is set',
        ),
    ],
    ids=[
        "request-above-limit",
        "quantity-unparsable",
        "resource-name-invalid",
        "containers-not-list",
        "init-restart-policy",
        "overhead-negative",
        "priority-out-of-int32",
        "priority-fraction",
        "node-name-invalid",
        "scheduler-name-empty-is-default",
        "node-selector-not-string",
        "toleration-exists-with-value",
        "toleration-no-key-needs-exists",
        "toleration-operator-unknown",
        "toleration-seconds-needs-no-execute",
    ],
)
def test_pod_spec_rules(spec, problem):
    if problem is None:
        assert record_of(pod(spec)).record["schedulerName"] == "default-scheduler"
        return
    problems = problems_of(pod(spec))
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_phase_must_be_known():
    assert problems_of(pod("{}", "{phase: Done}")) == [
        'status.phase: unsupported value "Done" (supported: Pending, Running, Succeeded, Failed, Unknown)'
    ]
