"""GPUs through NVML: a fake pynvml module stands in for the optional package; errors mean no GPU."""

import pytest

from node_agent.collectors.gpu import NVML, GPUUsage, model_label, normalize_bus_id
from tests.node_agent.conftest import fake_pynvml


def test_discovers_gpus_and_their_usage(tmp_path):
    numa = tmp_path / "bus/pci/devices/0000:3b:01.0/numa_node"
    numa.parent.mkdir(parents=True)
    numa.write_text("1\n")
    nvml = NVML(tmp_path, module=fake_pynvml())
    gpus = nvml.discover()
    assert [(g.uuid, g.minor, g.bus_id, g.numa_node, g.model) for g in gpus] == [
        ("GPU-0", 0, "0000:3b:00.0", 0, "NVIDIA A100-SXM4-80GB"), ("GPU-1", 1, "0000:3b:01.0", 1, "NVIDIA A100-SXM4-80GB")]
    assert nvml.usage() == {"GPU-0": GPUUsage(40, 1 << 30), "GPU-1": GPUUsage(41, 2 << 30)}
    assert nvml.driver_version == "535.161.08"


@pytest.mark.parametrize("fail", ["nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetPciInfo"],
                         ids=["no-driver", "count-fails", "device-query-fails"])
def test_nvml_errors_mean_no_gpu_not_a_crash(tmp_path, fail):
    nvml = NVML(tmp_path, module=fake_pynvml(fail=fail))
    assert nvml.discover() == []


def test_without_the_package_there_is_no_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr("node_agent.collectors.gpu._import_pynvml", lambda: None)
    nvml = NVML(tmp_path)
    assert (nvml.available, nvml.discover(), nvml.usage()) == (False, [], {})


@pytest.mark.parametrize("models, expected", [
    (["NVIDIA A100 SXM4 80GB"] * 2, "A100-SXM4-80GB"),
    (["Tesla T4"], "Tesla-T4"),
    (["Tesla T4", "Tesla P40"], ""),
    ([], ""),
], ids=["trim-and-dash", "tesla", "mixed-models", "none"])
def test_model_label_as_koordlet_writes_it(models, expected):
    assert model_label(models) == expected


def test_bus_id_gets_sysfs_domain_width():
    assert normalize_bus_id("00000000:3B:00.0") == "0000:3b:00.0"
