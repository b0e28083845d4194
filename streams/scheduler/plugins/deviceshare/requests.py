"""What a pod asks of its node's devices: Koordinator's request validation, conversion and per-GPU split.

Follows ``pkg/scheduler/plugins/deviceshare/utils.go`` and ``devicehandler_gpu.go``. The pod's requests are
masked per device type; the names present form a combination that must be one Koordinator accepts:

- whole GPUs alone: ``nvidia.com/gpu``, ``amd.com/gpu``, ``dcu.com/gpu`` (N -> gpu-core and gpu-memory-ratio 100N),
  ``koordinator.sh/gpu`` (percent -> the same pair);
- percentages: gpu-memory, gpu-memory-ratio, gpu-core + gpu-memory, gpu-core + gpu-memory-ratio, npu-core + ratio
  (gpu-core and ratio each <= 100 or a multiple of 100);
- ``gpu.shared`` (the v1.6 article's ``gpu-shared`` is the same resource) with gpu-memory or ratio, optionally
  gpu-core (each a multiple of gpu.shared and at most 100 per GPU), or the Huawei NPU shares;
- ``koordinator.sh/rdma``, ``koordinator.sh/fpga`` (<= 100 or a multiple of 100).

Anything else: "invalid resource device requests: [names]"; a percentage resource out of range:
"invalid resource unit <name>: <value>".

Per-GPU split: count = gpu.shared when set, else ratio / 100 when the ratio is a multiple of 100 above 100,
else 1; every resource is divided by the count; the request is *shared* when the ratio per GPU is below 100
or only gpu-memory is given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.koordinator.resources import (
    AMD_GPU, DEVICE_FPGA, DEVICE_GPU, DEVICE_RDMA, FPGA, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO, GPU_SHARED,
    GPU_SHARED_ARTICLE, HYGON_DCU, KOORD_GPU, NPU_CORE, NPU_CPU, NPU_DVPP, NVIDIA_GPU, RDMA)

GPU_NAMES = (NVIDIA_GPU, AMD_GPU, HYGON_DCU, KOORD_GPU, GPU_SHARED, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO,
             NPU_CORE, NPU_CPU, NPU_DVPP)
NAMES_BY_TYPE = {DEVICE_GPU: GPU_NAMES, DEVICE_RDMA: (RDMA,), DEVICE_FPGA: (FPGA,)}
"""Device types in the order their requests are validated, with the resources each owns."""

WHOLE = {NVIDIA_GPU, AMD_GPU, HYGON_DCU}
PERCENTAGE_RESOURCES = (KOORD_GPU, FPGA, RDMA)

_WHOLE_ALONE = [frozenset({name}) for name in (NVIDIA_GPU, AMD_GPU, HYGON_DCU, KOORD_GPU, FPGA, RDMA)]
_PERCENT = [frozenset(s) for s in ({GPU_MEMORY}, {GPU_MEMORY_RATIO}, {GPU_CORE, GPU_MEMORY},
                                   {GPU_CORE, GPU_MEMORY_RATIO}, {NPU_CORE, GPU_MEMORY_RATIO})]
_SHARED = [frozenset(s) for s in ({GPU_SHARED, GPU_MEMORY}, {GPU_SHARED, GPU_MEMORY_RATIO},
                                  {GPU_SHARED, GPU_CORE, GPU_MEMORY}, {GPU_SHARED, GPU_CORE, GPU_MEMORY_RATIO})]
_NPU_SHARED = [frozenset(s) for s in ({GPU_SHARED, NPU_CORE, NPU_CPU, GPU_MEMORY},
                                      {GPU_SHARED, NPU_CORE, NPU_CPU, NPU_DVPP, GPU_MEMORY})]


class DeviceRequestError(ValueError):
    """A pod's device requests Koordinator refuses (PreFilter: UnschedulableAndUnresolvable)."""


def _percentage(value: int) -> bool:
    """``ValidatePercentageResource``: at most 100, or whole devices (a multiple of 100)."""
    return not (value > 100 and value % 100)


def _valid(names: frozenset[str], req: Mapping[str, int]) -> bool:
    if names in _WHOLE_ALONE:
        return True
    if names in _PERCENT:
        return all(_percentage(req[name]) for name in (GPU_CORE, GPU_MEMORY_RATIO) if name in req)
    if names in _SHARED:
        shared = req[GPU_SHARED]
        return all(req[name] % shared == 0 and req[name] // shared <= 100
                   for name in (GPU_CORE, GPU_MEMORY_RATIO) if name in req)
    if names in _NPU_SHARED:
        return req[GPU_SHARED] <= 1 and req.get(NPU_DVPP, 0) <= 100
    return False


def validate(requests: Mapping[str, int]) -> frozenset[str]:
    """``ValidateDeviceRequest`` for one device type's non-zero requests: the combination, or DeviceRequestError."""
    if not requests:
        raise DeviceRequestError("pod request should not be empty")
    for name in sorted(requests):
        if name in PERCENTAGE_RESOURCES and not _percentage(requests[name]):
            raise DeviceRequestError(f"invalid resource unit {name}: {requests[name]}")
    names = frozenset(requests)
    if not _valid(names, requests):
        raise DeviceRequestError(f"invalid resource device requests: [{' '.join(sorted(requests))}]")
    return names


def convert(requests: Mapping[str, int], names: frozenset[str]) -> dict[str, int]:
    """``ConvertDeviceRequest``: whole GPUs and koordinator.sh/gpu become gpu-core + gpu-memory-ratio."""
    if len(names) == 1:
        (name,) = names
        if name in WHOLE:
            return {GPU_CORE: requests[name] * 100, GPU_MEMORY_RATIO: requests[name] * 100}
        if name == KOORD_GPU:
            return {GPU_CORE: requests[name], GPU_MEMORY_RATIO: requests[name]}
    return {name: requests[name] for name in sorted(names)}


def device_requests(pod_requests: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """``GetPodDeviceRequests``: device type -> converted requests, for the types the pod asks for."""
    requests = {name: value for name, value in pod_requests.items() if value}
    if GPU_SHARED_ARTICLE in requests:
        requests[GPU_SHARED] = requests.pop(GPU_SHARED_ARTICLE)
    out = {}
    for device_type, owned in NAMES_BY_TYPE.items():
        masked = {name: requests[name] for name in owned if name in requests}
        if masked:
            out[device_type] = convert(masked, validate(masked))
    return out


@dataclasses.dataclass(frozen=True)
class GPURequirements:
    """``GPURequirements``: how many GPUs, what each must give, whether they are shared."""

    count: int
    per_gpu: Mapping[str, int]
    shared: bool


def gpu_requirements(requests: Mapping[str, int]) -> GPURequirements:
    """``calcDesiredRequestsAndCountForGPU`` over converted GPU requests."""
    count = 1
    if requests.get(GPU_SHARED, 0) > 0:
        count = requests[GPU_SHARED]
    elif requests.get(GPU_MEMORY_RATIO, 0) > 100 and requests[GPU_MEMORY_RATIO] % 100 == 0:
        count = requests[GPU_MEMORY_RATIO] // 100
    per_gpu = {name: requests[name] // count for name in (GPU_CORE, NPU_CORE, NPU_CPU, NPU_DVPP) if name in requests}
    shared = False
    if GPU_MEMORY_RATIO in requests:
        per_gpu[GPU_MEMORY_RATIO] = requests[GPU_MEMORY_RATIO] // count
        shared = per_gpu[GPU_MEMORY_RATIO] < 100
    elif GPU_MEMORY in requests:
        per_gpu[GPU_MEMORY] = requests[GPU_MEMORY] // count
        shared = True
    return GPURequirements(count, per_gpu, shared)


def instance_requirements(requests: Mapping[str, int], resource: str) -> tuple[int, dict[str, int]]:
    """RDMA and FPGA (``devicehandler_default``): whole devices (a multiple of 100 above 100) or one share."""
    value = requests[resource]
    if value > 100 and value % 100 == 0:
        return value // 100, {resource: 100}
    return 1, {resource: value}
