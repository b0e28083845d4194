"""Reservation: requests of the template and the node it is pinned or scheduled to."""

from tests.streams.objects.support import SAMPLES, problems_of, record_of

RESERVATION = "apiVersion: scheduling.koordinator.sh/v1alpha1\nkind: Reservation\nmetadata: {{name: r}}\nspec: {spec}\nstatus: {status}\n"


def test_reservation_fields():
    record = record_of(SAMPLES["Reservation"]).record
    assert record["requests"] == {"cpu": 4000, "memory": 8 << 30, "nvidia.com/gpu": 1}
    assert record["nodeName"] == "node-1"


def test_requests_use_the_pod_formula():
    spec = (
        "{owners: [{}], template: {spec: {initContainers: [{resources: {requests: {cpu: 3}}}],"
        " containers: [{resources: {requests: {cpu: 1}}}, {resources: {limits: {cpu: 1}}}]}}}"
    )
    assert record_of(RESERVATION.format(spec=spec, status="{}")).record["requests"] == {"cpu": 3000}


def test_scheduled_reservation_takes_status_node_name():
    record = record_of(RESERVATION.format(spec="{owners: [{}], template: {}}",
                                          status="{nodeName: node-2, phase: Available}")).record
    assert (record["requests"], record["nodeName"]) == ({}, "node-2")


def test_template_quantities_are_validated():
    spec = "{owners: [{}], template: {spec: {containers: [{resources: {requests: {memory: -1}}}]}}}"
    assert problems_of(RESERVATION.format(spec=spec, status="{}")) == [
        'spec.template.spec.containers[0].resources.requests.memory: quantity must not be negative: "-1"'
    ]


def test_an_invalid_reservation_is_refused_with_its_field_named():
    assert problems_of(RESERVATION.format(spec="{ttl: -1h}", status="{}")) == [
        "spec.template: required: the pod template to reserve resources for",
        "spec.owners: required: at least one owner (object, controller or labelSelector)",
        'spec.ttl: must not be negative, got "-1h"']
