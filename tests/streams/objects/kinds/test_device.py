"""Device: one DeviceInfo per spec.devices entry."""

import pytest

from tests.streams.objects.support import SAMPLES, problems_of, record_of

DEVICE = "apiVersion: scheduling.koordinator.sh/v1alpha1\nkind: Device\nmetadata: {{name: n}}\nspec: {{devices: [{device}]}}\n"


def test_device_fields():
    assert record_of(SAMPLES["Device"]).record["devices"] == [
        {
            "type": "gpu",
            "minor": 0,
            "uuid": "GPU-0a1b2c3d",
            "health": True,
            "resources": {"koordinator.sh/gpu-core": 100, "koordinator.sh/gpu-memory": 80 << 30, "koordinator.sh/gpu-memory-ratio": 100},
        },
        {"type": "rdma", "minor": 1, "uuid": None, "health": True, "resources": {"koordinator.sh/rdma": 100}},
    ]


@pytest.mark.parametrize(
    ("device", "field", "value"),
    [
        ("{type: gpu, uuid: GPU-1}", "uuid", "GPU-1"),
        ("{type: gpu, id: GPU-1, uuid: GPU-1}", "uuid", "GPU-1"),
        ("{type: gpu, health: false}", "health", False),
        ("{type: gpu}", "health", True),
    ],
    ids=["uuid-alias", "id-and-uuid-agree", "unhealthy", "health-defaults-true"],
)
def test_device_info_fields(device, field, value):
    assert record_of(DEVICE.format(device=device)).record["devices"][0][field] == value


@pytest.mark.parametrize(
    ("device", "problem"),
    [
        ("{minor: 0}", "spec.devices[0].type: required"),
        ("{type: gpu, minor: -1}", "spec.devices[0].minor: must be between 0 and 2147483647, got -1"),
        ("{type: gpu, id: GPU-1, uuid: GPU-2}", 'spec.devices[0].uuid: "GPU-2" differs from id "GPU-1"'),
        ("{type: gpu, health: 'yes'}", 'spec.devices[0].health: must be true or false, got string "yes"'),
        (
            "{type: gpu, resources: {koordinator.sh/gpu-memory: 80GB}}",
            'spec.devices[0].resources[koordinator.sh/gpu-memory]: not a valid quantity: "80GB"',
        ),
    ],
    ids=["type-missing", "minor-negative", "id-uuid-conflict", "health-string", "resource-unparsable"],
)
def test_invalid_device(device, problem):
    assert problems_of(DEVICE.format(device=device)) == [problem]
