"""The actuation contract between the node aggregate (planner) and the node agent (actuator).

An ``Actuation`` record (``schemas/Actuation.avsc``) tells one node agent to
apply ``values`` to one target with one mechanism. Both sides import this
module, so the names below are the whole vocabulary:

Targets (``targetKind`` / ``targetId``):

- ``qos`` / a QoS class (``LSR``, ``LS``, ``BE``): the class's cgroup
  (``kubepods`` for LS/LSR, ``kubepods/besteffort`` for BE, as koordlet) or
  its resctrl group of the same name;
- ``pod`` / the pod UID: the pod's cgroup, wherever its kube QoS dir is;
- ``container`` / ``<pod uid>/<container id>``;
- ``hostapp`` / a host application's name from ``system-config``; ``values``
  carry its cgroup path under ``HOSTAPP_PATH`` (relative, validated);
- ``node`` / the node name: node-wide settings (tc classes).

Mechanisms and their setting names:

- ``cgroup``: cgroup v1 file names are the canonical setting names
  (``cpu.cfs_quota_us`` with ``-1`` for unlimited, ``cpu.cfs_period_us``,
  ``cpu.shares``, ``cpu.cfs_burst_us``, ``cpu.idle``, ``cpuset.cpus``,
  ``memory.limit_in_bytes``, ``cpu.bvt_warp_ns`` for group identity); the v2
  backend writes their counterparts (``cpu.max``, ``cpu.weight`` by
  Koordinator's shares->weight conversion, ``cpu.max.burst``, ...).
- ``resctrl``: ``l3.start_percent``, ``l3.end_percent``, ``mb.percent`` and
  ``tasks.pods`` (comma-separated pod UIDs whose tasks join the group); the
  agent turns percents into the host's cache bit masks, as koordlet does.
- ``tc``: per class ``L0``/``L1``/``L2`` (terway-qos priorities)
  ``<class>.request_bps`` and ``<class>.limit_bps``, plus ``total_bps``.

Every value is a decimal string (Avro map of strings). The ``sequence`` is
per node and increases with every actuation the node aggregate emits; an
agent applies an actuation only if its sequence is above the last one it
applied for the same (targetKind, targetId, mechanism).

Signing: HMAC-SHA256 with the shared key from ``KOORD_ACTUATION_KEY`` over
:func:`canonical_bytes` — the record without ``signature`` as JSON with
sorted keys and no spaces — so a signer and a verifier in any language agree.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os

TARGET_QOS = "qos"
TARGET_POD = "pod"
TARGET_CONTAINER = "container"
TARGET_HOSTAPP = "hostapp"
TARGET_NODE = "node"
TARGET_KINDS = (TARGET_QOS, TARGET_POD, TARGET_CONTAINER, TARGET_HOSTAPP, TARGET_NODE)

MECHANISM_CGROUP = "cgroup"
MECHANISM_RESCTRL = "resctrl"
MECHANISM_TC = "tc"
MECHANISMS = (MECHANISM_CGROUP, MECHANISM_RESCTRL, MECHANISM_TC)

QOS_GROUPS = ("LSR", "LS", "BE")
"""QoS classes an actuation can target (LSE shares LSR's treatment in resctrl, as koordlet)."""

CPU_QUOTA = "cpu.cfs_quota_us"
CPU_PERIOD = "cpu.cfs_period_us"
CPU_SHARES = "cpu.shares"
CPU_BURST = "cpu.cfs_burst_us"
CPU_IDLE = "cpu.idle"
CPU_BVT_WARP = "cpu.bvt_warp_ns"
CPUSET_CPUS = "cpuset.cpus"
MEMORY_LIMIT = "memory.limit_in_bytes"
CGROUP_SETTINGS = (CPU_QUOTA, CPU_PERIOD, CPU_SHARES, CPU_BURST, CPU_IDLE, CPU_BVT_WARP, CPUSET_CPUS, MEMORY_LIMIT)

L3_START = "l3.start_percent"
L3_END = "l3.end_percent"
MB_PERCENT = "mb.percent"
TASKS_PODS = "tasks.pods"
RESCTRL_SETTINGS = (L3_START, L3_END, MB_PERCENT, TASKS_PODS)

NET_CLASSES = ("L0", "L1", "L2")
TOTAL_BPS = "total_bps"
REQUEST_BPS_SUFFIX = ".request_bps"
LIMIT_BPS_SUFFIX = ".limit_bps"
TC_SETTINGS = (TOTAL_BPS, *(f"{c}{suffix}" for c in NET_CLASSES for suffix in (REQUEST_BPS_SUFFIX, LIMIT_BPS_SUFFIX)))
HOSTAPP_PATH = "cgroup.path"

KEY_ENV = "KOORD_ACTUATION_KEY"


def signing_key() -> bytes | None:
    """The shared key from the environment; None when actuations are not signed."""
    value = os.environ.get(KEY_ENV)
    return value.encode() if value else None


def canonical_bytes(record: dict) -> bytes:
    unsigned = {name: value for name, value in record.items() if name != "signature"}
    return json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sign(record: dict, key: bytes | None) -> dict:
    """``record`` with its signature set (left null when there is no key)."""
    if key is None:
        return {**record, "signature": None}
    return {**record, "signature": hmac.new(key, canonical_bytes(record), hashlib.sha256).digest()}


def verify(record: dict, key: bytes) -> bool:
    signature = record.get("signature")
    if not signature:
        return False
    expected = hmac.new(key, canonical_bytes(record), hashlib.sha256).digest()
    return hmac.compare_digest(expected, bytes(signature))
