"""GPUDeviceResource and RDMADeviceResource against Koordinator's ``gpudeviceresource/plugin_test.go`` and
``rdmadevicereource/plugin_test.go`` (case ids: Go test name / case name; several Go cases share a name, a
suffix tells them apart). Go's "args missing essential fields" and "get device object error" have no
counterpart: the node aggregate holds the Device, so there is no read to fail."""

from __future__ import annotations

import pytest

from streams.koordinator.labels import LABEL_GPU_DRIVER_VERSION, LABEL_GPU_MODEL, LABEL_GPU_VENDOR
from streams.koordinator.resources import (
    GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO, GPU_SHARED, KOORD_GPU, NPU_CORE, NPU_CPU, NPU_DVPP, RDMA)
from streams.noderesource.framework import NodeResource, NodeStatus, ResourceItem
from streams.noderesource.plugins.gpudeviceresource import (
    NAME, RESET_MESSAGE, RESOURCE_NAMES, UPDATE_LABELS_MESSAGE, UPDATE_RESOURCES_MESSAGE, GPUDeviceResource,
    GPUDeviceResourceArgs)
from streams.noderesource.plugins import rdmadeviceresource
from streams.noderesource.views import DeviceView, Snapshot, device_view
from streams.sloconfig.cpunormalization import CPUNormalizationStrategy
from tests.streams.noderesource.support import NOW, node, strategy

NVIDIA_LABELS = {LABEL_GPU_VENDOR: "nvidia", LABEL_GPU_MODEL: "A100", LABEL_GPU_DRIVER_VERSION: "480"}
HUAWEI_LABELS = {LABEL_GPU_VENDOR: "huawei", LABEL_GPU_MODEL: "Ascend-910"}


def gpu(memory: int, **resources) -> dict:
    return {"type": "gpu", "health": True, "resources": resources or {GPU_CORE: 100, GPU_MEMORY: memory,
                                                                      GPU_MEMORY_RATIO: 100}}


def npu(memory: int) -> dict:
    return {"type": "gpu", "health": True, "resources": {NPU_CORE: 20, NPU_CPU: 20, NPU_DVPP: 100, GPU_MEMORY: memory,
                                                         GPU_MEMORY_RATIO: 100}}


def device(labels: dict | None, devices: list[dict]) -> DeviceView:
    return device_view({"metadata": {"name": "test-node", "labels": labels}, "devices": devices})


NVIDIA = device(NVIDIA_LABELS, [gpu(8000), gpu(10000)])
HUAWEI = device(HUAWEI_LABELS, [npu(8000), npu(10000)])
NO_LABELS = device(None, [gpu(8000), gpu(10000)])
OTHER_LABELS = device({"anything": "anything"}, [gpu(8000), gpu(10000)])
NVIDIA_ITEMS = [(KOORD_GPU, 200), (GPU_CORE, 200), (GPU_MEMORY, 18000), (GPU_MEMORY_RATIO, 200)]
HUAWEI_ITEMS = [(GPU_MEMORY, 18000), (GPU_MEMORY_RATIO, 200), (NPU_CORE, 40), (NPU_CPU, 40), (NPU_DVPP, 200)]
SHARED = [(GPU_SHARED, 200)]
RESET = [(name, None, True, RESET_MESSAGE) for name in RESOURCE_NAMES]


def updated(items: list[tuple[str, int]]) -> list:
    return [(name, value, False, UPDATE_RESOURCES_MESSAGE) for name, value in sorted(items)]


def labelled(labels: dict) -> list:
    return [(NAME, None, False, UPDATE_LABELS_MESSAGE, labels)]


def snapshot(device_: DeviceView | None) -> Snapshot:
    return Snapshot(strategy(), CPUNormalizationStrategy(), node(), {}, None, NOW, device=device_)


@pytest.mark.parametrize("device_, shared, expected", [
    pytest.param(NVIDIA, True, updated(NVIDIA_ITEMS + SHARED) + labelled(NVIDIA_LABELS),
                 id="TestPluginCalculate/calculate_device_resources_correctly-nvidia-shared"),
    pytest.param(HUAWEI, True, updated(HUAWEI_ITEMS + SHARED) + labelled(HUAWEI_LABELS),
                 id="TestPluginCalculate/calculate_device_resources_correctly-huawei-shared"),
    pytest.param(NO_LABELS, True, updated(NVIDIA_ITEMS + SHARED),
                 id="TestPluginCalculate/calculate_device_resources_correctly-missing-labels-shared"),
    pytest.param(OTHER_LABELS, True, updated(NVIDIA_ITEMS + SHARED),
                 id="TestPluginCalculate/calculate_device_resources_correctly-missing-gpu-labels-shared"),
    pytest.param(NVIDIA, False, updated(NVIDIA_ITEMS) + labelled(NVIDIA_LABELS),
                 id="TestPluginCalculate/calculate_device_resources_correctly-nvidia"),
    pytest.param(HUAWEI, False, updated(HUAWEI_ITEMS) + labelled(HUAWEI_LABELS),
                 id="TestPluginCalculate/calculate_device_resources_correctly-huawei"),
    pytest.param(NO_LABELS, False, updated(NVIDIA_ITEMS),
                 id="TestPluginCalculate/calculate_device_resources_correctly-missing-labels"),
    pytest.param(OTHER_LABELS, False, updated(NVIDIA_ITEMS),
                 id="TestPluginCalculate/calculate_device_resources_correctly-missing-gpu-labels"),
    pytest.param(None, False, RESET, id="TestPluginCalculate/calculate_resetting_device_resources-no-device"),
    pytest.param(device(None, []), False, RESET,
                 id="TestPluginCalculate/calculate_resetting_device_resources-no-gpu"),
    pytest.param(device(None, [{**gpu(8000), "health": False}, {"type": "rdma", "health": True}]), False, RESET,
                 id="unhealthy-gpu-and-rdma-only"),
])
def test_calculate(device_, shared, expected):
    plugin = GPUDeviceResource(GPUDeviceResourceArgs(sync_shared_resource=shared))
    items = plugin.calculate(snapshot(device_))
    shown = [(i.name, i.quantity, i.reset, i.message, *([dict(i.labels)] if i.labels else [])) for i in items]
    assert shown == expected


def test_reset_when_colocation_is_disabled_keeps_device_resources():
    assert GPUDeviceResource().reset("disabled") == [] and rdmadeviceresource.RDMADeviceResource().reset("x") == []


@pytest.mark.parametrize("result, labels, expected", [
    pytest.param(NodeResource(), {}, {GPU_CORE: 100}, id="TestPluginPrepare/nothing_to_prepare"),
    pytest.param(NodeResource(resources={KOORD_GPU: 200, GPU_CORE: 200, GPU_MEMORY: 18000, GPU_MEMORY_RATIO: 200,
                                         "koordinator.sh/fpga": 1}),
                 NVIDIA_LABELS, {KOORD_GPU: 200, GPU_CORE: 200, GPU_MEMORY: 18000, GPU_MEMORY_RATIO: 200},
                 id="TestPluginPrepare/nvidia:_update_resources_and_labels_correctly"),
    pytest.param(NodeResource(resets={name: True for name in RESOURCE_NAMES}), {}, {},
                 id="TestPluginPrepare/nvidia:_reset_resources_correctly"),
    pytest.param(NodeResource(resources={NPU_CORE: 40, NPU_CPU: 40, NPU_DVPP: 200, GPU_MEMORY: 18000,
                                         GPU_MEMORY_RATIO: 200}),
                 HUAWEI_LABELS, {GPU_CORE: 100, NPU_CORE: 40, NPU_CPU: 40, NPU_DVPP: 200, GPU_MEMORY: 18000,
                                 GPU_MEMORY_RATIO: 200},
                 id="TestPluginPrepare/huawei:_update_resources_and_labels_correctly"),
])
def test_prepare(result, labels, expected):
    if labels:
        result.set([ResourceItem(NAME, labels=labels)])
    node_ = node()
    status = NodeStatus(node_, {"cpu": 1000, GPU_CORE: 100}, {"cpu": 1000, GPU_CORE: 100}, {})
    GPUDeviceResource().prepare(strategy(), status, result)
    assert {k: v for k, v in status.allocatable.items() if k != "cpu"} == expected
    assert {k: v for k, v in status.capacity.items() if k != "cpu"} == expected
    assert status.labels == labels


@pytest.mark.parametrize("device_, expected", [
    pytest.param(device(None, [{"type": "rdma", "health": True}, {"type": "rdma", "health": True},
                               {"type": "rdma", "health": False}, gpu(8000)]),
                 [(RDMA, 200, False, rdmadeviceresource.UPDATE_RESOURCES_MESSAGE)],
                 id="TestPluginCalculate/calculate_device_resources_correctly"),
    pytest.param(None, [(RDMA, None, True, rdmadeviceresource.RESET_MESSAGE)],
                 id="TestPluginCalculate/calculate_resetting_device_resources-no-device"),
    pytest.param(device(None, [gpu(8000)]), [(RDMA, None, True, rdmadeviceresource.RESET_MESSAGE)],
                 id="TestPluginCalculate/calculate_resetting_device_resources-no-rdma"),
])
def test_rdma_calculate(device_, expected):
    items = rdmadeviceresource.RDMADeviceResource().calculate(snapshot(device_))
    assert [(i.name, i.quantity, i.reset, i.message) for i in items] == expected


def test_device_view_round_trips_through_json():
    assert DeviceView.from_json(NVIDIA.to_json()) == NVIDIA
