"""Readers of one host source each; pure parsers beside thin file readers, none raises on an odd host.

- ``procstat``: node CPU from /proc/stat deltas.
- ``memory``: /proc/meminfo and memory.stat under koordlet's page-cache policies.
- ``capacity``: online CPUs, MemTotal, max pods, GPUs.
- ``topology``: sockets, NUMA nodes, cores, SMT siblings; CPU model, HT, turbo.
- ``cgroups``: the kubepods tree (v1/v2, cgroupfs/systemd): CPU, memory, throttling, PSI.
- ``hostapps``: host-application cgroups from the NodeSLO-shaped config file.
- ``coldmemory``: kidled's memory.idle_page_stats.
- ``gpu``: NVML (optional ``nvidia-ml-py``); ``rdma``: /sys/class/infiniband.
"""
