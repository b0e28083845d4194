"""Koordinator's extended resource names (``apis/extension/resource.go``, ``device_share.go``).

Batch pods ask for ``batch-cpu``/``batch-memory``, mid pods for
``mid-cpu``/``mid-memory``; prod and none use cpu/memory; free translates to
nothing (``TranslateResourceNameByPriorityClass``). The cpu ones are integers
whose unit is the milli-core.
"""

from __future__ import annotations

from streams.koordinator.classes import PRIORITY_BATCH, PRIORITY_MID, PRIORITY_NONE, PRIORITY_PROD

BATCH_CPU = "kubernetes.io/batch-cpu"
"""Integer whose unit is the milli-core."""
BATCH_MEMORY = "kubernetes.io/batch-memory"
MID_CPU = "kubernetes.io/mid-cpu"
"""Integer whose unit is the milli-core."""
MID_MEMORY = "kubernetes.io/mid-memory"
BATCH_RESOURCES = (BATCH_CPU, BATCH_MEMORY)
EXTENDED_RESOURCES = (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY)

GPU_CORE = "koordinator.sh/gpu-core"
"""Percent of one GPU's compute (100 per GPU)."""
GPU_MEMORY = "koordinator.sh/gpu-memory"
GPU_MEMORY_RATIO = "koordinator.sh/gpu-memory-ratio"
RDMA = "koordinator.sh/rdma"
"""Percent of one RDMA device (100 per device or VF)."""
FPGA = "koordinator.sh/fpga"
KOORD_GPU = "koordinator.sh/gpu"
"""Percent of whole GPUs (100 = one GPU); DeviceShare converts it to gpu-core and gpu-memory-ratio."""
GPU_SHARED = "koordinator.sh/gpu.shared"
"""Number of GPUs a shared request spreads over (Koordinator's source spells it with a dot)."""
GPU_SHARED_ARTICLE = "koordinator.sh/gpu-shared"
"""The v1.6 article's spelling of ``GPU_SHARED``; accepted as the same resource."""
NVIDIA_GPU = "nvidia.com/gpu"
"""The NVIDIA device plugin's resource (whole GPUs)."""
AMD_GPU = "amd.com/gpu"
HYGON_DCU = "dcu.com/gpu"
NPU_CORE = "huawei.com/npu-core"
NPU_CPU = "huawei.com/npu-cpu"
NPU_DVPP = "huawei.com/npu-dvpp"
DEVICE_GPU, DEVICE_RDMA, DEVICE_FPGA = "gpu", "rdma", "fpga"
"""Device types of the Device object (``schedulingv1alpha1.DeviceType``)."""
USAGE_WITHOUT_PAGE_CACHE, USAGE_WITH_PAGE_CACHE, USAGE_WITH_HOT_PAGE_CACHE = (
    "usageWithoutPageCache", "usageWithPageCache", "usageWithHotPageCache")
MEMORY_COLLECT_POLICIES = (USAGE_WITHOUT_PAGE_CACHE, USAGE_WITH_PAGE_CACHE, USAGE_WITH_HOT_PAGE_CACHE)
"""``NodeMemoryCollectPolicy`` (``apis/slo/v1alpha1/nodemetric_types.go``): how NodeMetric memory usage counts
page cache; usageWithHotPageCache leaves out kidled's cold pages."""

_BY_PRIORITY_CLASS = {
    PRIORITY_BATCH: {"cpu": BATCH_CPU, "memory": BATCH_MEMORY},
    PRIORITY_MID: {"cpu": MID_CPU, "memory": MID_MEMORY},
}


def translate_resource(resource: str, priority_class: str) -> str:
    """``TranslateResourceNameByPriorityClass``; "" when the class has no such resource (free)."""
    if priority_class in (PRIORITY_PROD, PRIORITY_NONE):
        return resource
    return _BY_PRIORITY_CLASS.get(priority_class, {}).get(resource, "")
