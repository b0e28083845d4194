"""Reservation: requests of the template and the node it is pinned or scheduled to."""

from tests.streams.objects.support import SAMPLES, problems_of, record_of

RESERVATION = "apiVersion: scheduling.koordinator.sh/v1alpha1\nkind: Reservation\nmetadata: {{name: r}}\nspec: {spec}\nstatus: {status}\n"


def test_reservation_fields():
    record = record_of(SAMPLES["Reservation"]).record
    assert record["requests"] == {"cpu": 4000, "memory": 8 << 30, "nvidia.com/gpu": 1}
    assert record["nodeName"] == "node-1"


def test_requests_use_the_pod_formula():
    spec = (
        "{template: {spec: {initContainers: [{resources: {requests: {cpu: 3}}}],"
        " containers: [{resources: {requests: {cpu: 1}}}, {resources: {limits: {cpu: 1}}}]}}}"
    )
    assert record_of(RESERVATION.format(spec=spec, status="{}")).record["requests"] == {"cpu": 3000}


def test_scheduled_reservation_takes_status_node_name():
    record = record_of(RESERVATION.format(spec="{}", status="{nodeName: node-2, phase: Available}")).record
    assert (record["requests"], record["nodeName"]) == ({}, "node-2")


def test_template_quantities_are_validated():
    spec = "{template: {spec: {containers: [{resources: {requests: {memory: -1}}}]}}}"
    assert problems_of(RESERVATION.format(spec=spec, status="{}")) == [
        'spec.template.spec.containers[0].resources.requests.memory: quantity must not be negative: "-1"'
    ]
