"""Koordinator's vocabulary, defined once: every other module imports it from here.

- ``classes``: priority classes (koord-prod/mid/batch/free, their ``spec.priority`` ranges) and QoS
  classes (LSE/LSR/LS/BE/SYSTEM, Kubernetes QoS -> Koordinator QoS with Guaranteed -> LSR);
- ``resources``: extended resource names (batch/mid cpu and memory, GPU, RDMA);
- ``labels``, ``annotations``: the keys Koordinator reads on pods, nodes and quotas.
"""
