"""The actuation contract between the node aggregate (planner) and the node agent (actuator).

An ``Actuation`` record (``schemas/Actuation.avsc``) tells one node agent to
apply ``values`` to one target with one mechanism. Both sides import this
module, so the names below are the whole vocabulary:

Targets (``targetKind`` / ``targetId``):

- ``qos`` / a QoS class (``LSR``, ``LS``, ``BE``): the class's cgroup
  (``kubepods`` for LS/LSR, ``kubepods/besteffort`` for BE, as koordlet) or
  its resctrl group of the same name;
- ``pod`` / the pod UID: the pod's cgroup, wherever its kube QoS dir is; its
  own resctrl group ``koordlet-<uid>`` (koordlet's ``ClosdIdPrefix``); its
  tc settings;
- ``container`` / ``<pod uid>/<container id>``;
- ``hostapp`` / a host application's name from ``system-config``; ``values``
  carry its cgroup path under ``HOSTAPP_PATH`` (relative, validated);
- ``node`` / the node name: node-wide settings (tc classes).

Mechanisms and their setting names (``SETTINGS`` holds the allowed names per
(mechanism, targetKind); ``MECHANISM_TARGETS`` the pairs):

- ``cgroup``: cgroup v1 file names are the canonical setting names
  (``cpu.cfs_quota_us`` with ``-1`` for unlimited, ``cpu.cfs_period_us``,
  ``cpu.shares``, ``cpu.cfs_burst_us``, ``cpu.idle``, ``cpuset.cpus``,
  ``memory.limit_in_bytes``, ``cpu.bvt_warp_ns`` for group identity); the v2
  backend writes their counterparts (``cpu.max``, ``cpu.weight`` by
  Koordinator's shares->weight conversion, ``cpu.max.burst``, ...). Pod
  targets also take ``core_sched.group``: the pod's core-scheduling group
  (koordlet's ``coresched`` hook): every task of the pods with the same group
  shares one cookie (``prctl(PR_SCHED_CORE)``); ``0`` is the default cookie
  (none). A group is a label value or a pod UID, optionally suffixed
  ``-expeller``; the empty group is a group too (enabled pods without a group
  label share it).
- ``resctrl``: ``l3.start_percent``, ``l3.end_percent``, ``mb.percent`` and
  ``tasks.pods`` (comma-separated pod UIDs whose tasks join the group; on a
  pod target only that pod's UID); the agent turns percents into the host's
  cache bit masks, as koordlet does. A pod target also takes ``group.remove``
  ``1``, alone: remove the pod's group (its pod left the node or no longer
  asks for one; its tasks fall back to the default group).
- ``tc``: on the node, per class ``L0``/``L1``/``L2`` (terway-qos priorities)
  ``<class>.request_bps`` and ``<class>.limit_bps``, plus ``total_bps``; on a
  pod ``priority`` (0 SYSTEM, 1 LS, 2 BE), ``ingress.limit_bps`` and
  ``egress.limit_bps`` (bits/s, 0 unlimited; annotation
  ``koordinator.sh/networkQOS``) and ``address``, the pod's IP
  (``status.podIP``) by which the agent sorts its packets, as terway-qos keys
  pods by address; the planner leaves it out (it plans before the pod has an
  IP) and the agent then takes it from the pods topic.

Every value is a decimal string (Avro map of strings). The ``sequence`` is
per node and increases with every actuation the node aggregate emits; an
agent applies an actuation only if its sequence is above the last one it
applied for the same (targetKind, targetId, mechanism).

Acknowledgement (``ActuationAck``): ``values`` are the settings read back
from the host after the attempt, in canonical names, only for the settings
this host supports; ``applied`` is true when every supported setting is in
force (written, or already equal) and at least one setting was supported;
``error`` is null only when everything asked for is in force. A setting the
host cannot apply (no such cgroup file, no core scheduling in the kernel, no
pod address or no ifb device for pod tc, resctrl not mounted) is named in
``error`` as ``unsupported <setting>: <why>`` and is absent from ``values``,
without undoing the others: ``applied=true`` with an ``error`` is a partial success.
A refusal (``rejected (<reason>): ...``) or a failed write (the previous
values restored) is ``applied=false``.

Signing: HMAC-SHA256 with the shared key from ``KOORD_ACTUATION_KEY`` (``Settings.actuation_key``) over
:func:`canonical_bytes` — the record without ``signature`` as JSON with
sorted keys and no spaces — so a signer and a verifier in any language agree.
"""

from __future__ import annotations

import hashlib
import hmac
import json

from streams.koordinator.classes import QOS_BE, QOS_LS, QOS_LSR
from streams.settings import Settings, env_name

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

QOS_GROUPS = (QOS_LSR, QOS_LS, QOS_BE)
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
"""The cgroup settings that are cgroup files (v1 names)."""
CORE_SCHED_GROUP = "core_sched.group"
"""``cgroup`` on a pod: its core-scheduling group; pods of one group share one cookie."""
CORE_SCHED_NONE = "0"
"""The ``core_sched.group`` of the default cookie (no core scheduling)."""

L3_START = "l3.start_percent"
L3_END = "l3.end_percent"
MB_PERCENT = "mb.percent"
TASKS_PODS = "tasks.pods"
RESCTRL_SETTINGS = (L3_START, L3_END, MB_PERCENT, TASKS_PODS)
GROUP_REMOVE = "group.remove"
"""``resctrl`` on a pod: ``1`` removes the pod's own group; never with other settings."""
POD_RESCTRL_SETTINGS = (*RESCTRL_SETTINGS, GROUP_REMOVE)
RESCTRL_POD_GROUP_PREFIX = "koordlet-"
"""A pod's own resctrl group is ``koordlet-<pod uid>`` (koordlet's resctrl hook)."""

NET_CLASSES = ("L0", "L1", "L2")
TOTAL_BPS = "total_bps"
REQUEST_BPS_SUFFIX = ".request_bps"
LIMIT_BPS_SUFFIX = ".limit_bps"
TC_SETTINGS = (TOTAL_BPS, *(f"{c}{suffix}" for c in NET_CLASSES for suffix in (REQUEST_BPS_SUFFIX, LIMIT_BPS_SUFFIX)))
NET_PRIORITY = "priority"
"""``tc`` on a pod: its terway-qos priority (0 SYSTEM, 1 LS, 2 BE)."""
NET_INGRESS_LIMIT = "ingress.limit_bps"
NET_EGRESS_LIMIT = "egress.limit_bps"
"""``tc`` on a pod: its own limits from ``koordinator.sh/networkQOS`` in bits/s (0: unlimited)."""
NET_ADDRESS = "address"
"""``tc`` on a pod: its IPv4 or IPv6 address (``status.podIP``); without it the agent classifies the pod by the
address the pods topic gives."""
POD_TC_SETTINGS = (NET_PRIORITY, NET_INGRESS_LIMIT, NET_EGRESS_LIMIT, NET_ADDRESS)
HOSTAPP_PATH = "cgroup.path"

MECHANISM_TARGETS = {
    MECHANISM_CGROUP: (TARGET_QOS, TARGET_POD, TARGET_CONTAINER, TARGET_HOSTAPP),
    MECHANISM_RESCTRL: (TARGET_QOS, TARGET_POD),
    MECHANISM_TC: (TARGET_NODE, TARGET_POD),
}
"""The target kinds each mechanism applies to."""
SETTINGS = {
    **{(MECHANISM_CGROUP, kind): CGROUP_SETTINGS for kind in (TARGET_QOS, TARGET_CONTAINER)},
    (MECHANISM_CGROUP, TARGET_POD): (*CGROUP_SETTINGS, CORE_SCHED_GROUP),
    (MECHANISM_CGROUP, TARGET_HOSTAPP): (HOSTAPP_PATH, *CGROUP_SETTINGS),
    (MECHANISM_RESCTRL, TARGET_QOS): RESCTRL_SETTINGS,
    (MECHANISM_RESCTRL, TARGET_POD): POD_RESCTRL_SETTINGS,
    (MECHANISM_TC, TARGET_NODE): TC_SETTINGS,
    (MECHANISM_TC, TARGET_POD): POD_TC_SETTINGS,
}
"""(mechanism, targetKind) -> the setting names an actuation may carry: the whole vocabulary."""

KEY_ENV = env_name(Settings, "actuation_key")


def signing_key(settings: Settings | None = None) -> bytes | None:
    """The shared key of ``settings`` (default: read from the environment); None when actuations are not
    signed."""
    key = (settings or Settings.from_env()).actuation_key
    return key.encode() if key else None


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
