"""DeviceShare's request validation and conversion: Koordinator's ``TestValidateDeviceRequest`` (DS-1..5),
the PreFilter messages (DS-6), ``TestConvertDeviceRequest`` and the per-GPU split."""

import pytest

from streams.scheduler.plugins.deviceshare.requests import (
    DeviceRequestError, convert, device_requests, gpu_requirements, validate)

GI = 1 << 30
K = "koordinator.sh/"
CORE, MEM, RATIO, SHARED, GPU = K + "gpu-core", K + "gpu-memory", K + "gpu-memory-ratio", K + "gpu.shared", K + "gpu"
NPU_CORE, NPU_CPU, DVPP = "huawei.com/npu-core", "huawei.com/npu-cpu", "huawei.com/npu-dvpp"


@pytest.mark.parametrize("requests", [
    pytest.param({}, id="DS-1-empty"),
    pytest.param({CORE: 101}, id="DS-1-core-alone"),
    pytest.param({GPU: 101}, id="DS-1-koord-gpu-101"),
    pytest.param({CORE: 100, RATIO: 101}, id="DS-1-ratio-101"),
    pytest.param({"nvidia.com/gpu": 2, GPU: 200, CORE: 200, MEM: 32 * GI, RATIO: 200}, id="DS-1-everything"),
    pytest.param({RATIO: 101, SHARED: 1}, id="DS-3-ratio-101-shared-1"),
    pytest.param({RATIO: 101, SHARED: 2}, id="DS-3-ratio-101-shared-2"),
    pytest.param({CORE: 101, MEM: 64 * GI, SHARED: 1}, id="DS-3-core-101-shared-1"),
    pytest.param({CORE: 101, MEM: 64 * GI, SHARED: 2}, id="DS-3-core-101-shared-2"),
    pytest.param({NPU_CORE: 40, MEM: 128 * GI}, id="DS-4-npu-memory"),
    pytest.param({SHARED: 2, NPU_CORE: 20, NPU_CPU: 6, DVPP: 200, MEM: 32 * GI}, id="DS-4-npu-shared-2"),
    pytest.param({SHARED: 1, NPU_CORE: 10, MEM: 16 * GI}, id="DS-4-npu-without-cpu"),
    pytest.param({K + "fpga": 201}, id="DS-5-fpga-201"),
    pytest.param({K + "rdma": 201}, id="DS-5-rdma-201"),
])
def test_invalid_requests(requests):
    with pytest.raises(DeviceRequestError):
        validate(requests)


@pytest.mark.parametrize("requests", [
    pytest.param({"nvidia.com/gpu": 2}, id="DS-2-nvidia"),
    pytest.param({"dcu.com/gpu": 2}, id="DS-2-hygon"),
    pytest.param({GPU: 200}, id="DS-2-koord-gpu"),
    pytest.param({CORE: 200, MEM: 64 * GI}, id="DS-2-core-memory"),
    pytest.param({CORE: 200, RATIO: 200}, id="DS-2-core-ratio"),
    pytest.param({RATIO: 200}, id="DS-2-ratio"),
    pytest.param({MEM: 64 * GI}, id="DS-2-memory"),
    pytest.param({RATIO: 200, SHARED: 2}, id="DS-3-ratio-200-shared-2"),
    pytest.param({RATIO: 100, SHARED: 2}, id="DS-3-ratio-100-shared-2"),
    pytest.param({CORE: 100, MEM: 64 * GI, SHARED: 1}, id="DS-3-core-100-shared-1"),
    pytest.param({CORE: 100, MEM: 64 * GI, SHARED: 2}, id="DS-3-core-100-shared-2"),
    pytest.param({NPU_CORE: 40, RATIO: 200}, id="DS-4-npu-ratio"),
    pytest.param({SHARED: 1, NPU_CORE: 10, NPU_CPU: 3, MEM: 16 * GI}, id="DS-4-npu-shared"),
    pytest.param({SHARED: 1, NPU_CORE: 10, NPU_CPU: 3, DVPP: 100, MEM: 16 * GI}, id="DS-4-npu-shared-dvpp"),
    pytest.param({K + "fpga": 50}, id="DS-5-fpga-50"),
    pytest.param({K + "rdma": 50}, id="DS-5-rdma-50"),
])
def test_valid_requests(requests):
    assert validate(requests) == frozenset(requests)


@pytest.mark.parametrize("requests, message", [
    ({K + "fpga": 101}, "invalid resource unit koordinator.sh/fpga: 101"),
    ({GPU: 101}, "invalid resource unit koordinator.sh/gpu: 101"),
    ({CORE: 100}, "invalid resource device requests: [koordinator.sh/gpu-core]"),
    ({RATIO: 101}, "invalid resource device requests: [koordinator.sh/gpu-memory-ratio]"),
    ({NPU_CORE: 8}, "invalid resource device requests: [huawei.com/npu-core]"),
], ids=["DS-6-fpga", "DS-6-koord-gpu", "DS-6-core", "DS-6-ratio", "DS-6-npu"])
def test_prefilter_messages(requests, message):
    with pytest.raises(DeviceRequestError, match=r"^" + message.replace("[", r"\[").replace("]", r"\]") + "$"):
        device_requests({"cpu": 1000, **requests})


@pytest.mark.parametrize("requests, expected", [
    ({"nvidia.com/gpu": 2}, {CORE: 200, RATIO: 200}),
    ({"dcu.com/gpu": 2}, {CORE: 200, RATIO: 200}),
    ({GPU: 50}, {CORE: 50, RATIO: 50}),
    ({K + "rdma": 80}, {K + "rdma": 80}),
], ids=["nvidia", "hygon", "koord-gpu", "rdma"])
def test_convert(requests, expected):
    assert convert(requests, validate(requests)) == expected


def test_requests_are_split_per_device_type_and_the_articles_gpu_shared_is_gpu_dot_shared():
    out = device_requests({"cpu": 40, K + "gpu-shared": 1, CORE: 50, RATIO: 50, K + "rdma": 100})
    assert out == {"gpu": {SHARED: 1, CORE: 50, RATIO: 50}, "rdma": {K + "rdma": 100}}


@pytest.mark.parametrize("requests, count, per_gpu, shared", [
    ({CORE: 200, RATIO: 200}, 2, {CORE: 100, RATIO: 100}, False),
    ({CORE: 50, RATIO: 50}, 1, {CORE: 50, RATIO: 50}, True),
    ({SHARED: 2, CORE: 100, RATIO: 100}, 2, {CORE: 50, RATIO: 50}, True),
    ({MEM: 8 * GI}, 1, {MEM: 8 * GI}, True),
    ({SHARED: 2, MEM: 16 * GI}, 2, {MEM: 8 * GI}, True),
])
def test_per_gpu_split(requests, count, per_gpu, shared):
    requirements = gpu_requirements(requests)
    assert (requirements.count, dict(requirements.per_gpu), requirements.shared) == (count, per_gpu, shared)
