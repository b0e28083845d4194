"""Capacity: online CPUs in milli-cores, MemTotal in bytes, max pods, GPUs."""

import os

from node_agent.collectors.capacity import node_capacity


def test_capacity_from_online_cpus_and_memtotal(fake_host):
    assert node_capacity(fake_host.sys, fake_host.proc, max_pods=110, gpus=2) == {
        "cpu": 4000, "memory": (16 << 20) * 1024, "pods": 110, "nvidia.com/gpu": 2}


def test_missing_files_fall_back_or_leave_the_resource_out(tmp_path):
    assert node_capacity(tmp_path, tmp_path, max_pods=10) == {"cpu": os.cpu_count() * 1000, "pods": 10}
