"""Whether an Actuation may be applied on this node; a refusal names its reason.

Checks, in this order (the first failing one is the reason):

1. the record has the Actuation fields with the right types (``malformed``);
2. ``nodeName`` is this node (``wrong-node``);
3. when a key is configured (``KOORD_ACTUATION_KEY``), the HMAC-SHA256
   signature of ``streams.actuation`` is present (``unsigned``) and valid
   (``bad-signature``); checked before anything else is looked at, so an
   unsigned record cannot probe the rest;
4. target kind, mechanism and their pairing are known (``unknown-target-kind``,
   ``unknown-mechanism``, ``mechanism-not-for-target``): the contract's
   ``MECHANISM_TARGETS`` (cgroup for qos, pod, container and hostapp; resctrl
   for qos and pod; tc for node and pod);
5. the target id is a valid identifier (``bad-target``, ``paths.py``);
6. every setting name belongs to the (mechanism, target kind) in the
   contract's ``SETTINGS`` (``unknown-setting``). A known setting the host
   cannot apply is not refused here: the backend reports it unsupported;
7. the sequence is above the last one applied for the same
   (targetKind, targetId, mechanism): equal to it is ``duplicate`` (a replay
   of the actuation already applied, whose acknowledgement stands), below it
   ``stale-sequence``;
8. without a signing key, the sequence is at most ``MAX_UNSIGNED_JUMP`` above
   the highest sequence this node ever applied (``sequence-jump``). Anyone who
   can write the actuations topic could otherwise send one far-future sequence
   (2^63 - 1) and block its target for good, since every real actuation would
   then be stale. A signed actuation came from the worker and may jump any
   distance; so may the first one an agent with no stored sequences applies.

The backends add ``bad-value``, ``protected-target`` and
``target-not-found`` while planning, still before any write; anything else
that goes wrong before a write (an OSError reading the host, a bug) is
``internal-error`` (``actuator.py``). A rejected actuation writes nothing
and does not move the sequence.
"""

from __future__ import annotations

import dataclasses

from node_agent.actuator import paths
from node_agent.actuator.sequences import SequenceStore, target_key
from streams import actuation as contract

MALFORMED = "malformed"
WRONG_NODE = "wrong-node"
UNSIGNED = "unsigned"
BAD_SIGNATURE = "bad-signature"
UNKNOWN_TARGET_KIND = "unknown-target-kind"
UNKNOWN_MECHANISM = "unknown-mechanism"
MECHANISM_NOT_FOR_TARGET = "mechanism-not-for-target"
BAD_TARGET = "bad-target"
UNKNOWN_SETTING = "unknown-setting"
STALE_SEQUENCE = "stale-sequence"
DUPLICATE = "duplicate"
SEQUENCE_JUMP = "sequence-jump"
INTERNAL_ERROR = "internal-error"
BAD_VALUE = "bad-value"
PROTECTED_TARGET = "protected-target"
TARGET_NOT_FOUND = "target-not-found"
REASONS = (MALFORMED, WRONG_NODE, UNSIGNED, BAD_SIGNATURE, UNKNOWN_TARGET_KIND, UNKNOWN_MECHANISM,
           MECHANISM_NOT_FOR_TARGET, BAD_TARGET, UNKNOWN_SETTING, STALE_SEQUENCE, DUPLICATE, SEQUENCE_JUMP, BAD_VALUE,
           PROTECTED_TARGET, TARGET_NOT_FOUND, INTERNAL_ERROR)

MAX_UNSIGNED_JUMP = 1_000_000
"""How far above the node's highest applied sequence an unsigned actuation may be. The node aggregate takes
one sequence per actuation it emits for the node; a few per NodeMetric at koordlet's 60 s report interval is
about 10,000 a day, so this covers an agent that missed three months of actuations. An agent further behind
refuses, with this reason in every acknowledgement, until its state dir is cleared or a signing key is
configured; a new incarnation of the actuations topic resets the sequences by itself
(``actuator.follow_incarnation``)."""

MECHANISM_TARGETS = contract.MECHANISM_TARGETS
SETTINGS = contract.SETTINGS


class Rejected(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


@dataclasses.dataclass(frozen=True)
class Target:
    """A verified target: ``kind`` and ``id`` as sent, with the validated parts backends build paths from."""

    kind: str
    id: str
    mechanism: str
    qos: str | None = None
    pod_uid: str | None = None
    container_id: str | None = None
    cgroup_path: str | None = None
    """Host application's relative cgroup directory."""

    @property
    def key(self) -> str:
        return target_key(self.kind, self.id, self.mechanism)


_FIELDS = {"decisionId": str, "nodeName": str, "sequence": int, "targetKind": str, "targetId": str,
           "mechanism": str, "values": dict, "timestamp": int}


class Verifier:
    def __init__(self, node_name: str, key: bytes | None, sequences: SequenceStore) -> None:
        self.node_name, self.key, self.sequences = node_name, key, sequences

    def check(self, record: object) -> Target:
        """The record's verified target; Rejected with the first failing check."""
        if not isinstance(record, dict):
            raise Rejected(MALFORMED, "not a record")
        for name, kind in _FIELDS.items():
            if not isinstance(record.get(name), kind) or (kind is int and isinstance(record.get(name), bool)):
                raise Rejected(MALFORMED, f"field {name} is missing or not {kind.__name__}")
        values = record["values"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
            raise Rejected(MALFORMED, "values must map strings to strings")
        if record["nodeName"] != self.node_name:
            raise Rejected(WRONG_NODE, f"addressed to {record['nodeName']!r}, this node is {self.node_name!r}")
        if self.key is not None:
            signature = record.get("signature")
            if not signature:
                raise Rejected(UNSIGNED, "a signing key is configured and the actuation carries no signature")
            if not isinstance(signature, (bytes, bytearray)) or not contract.verify(record, self.key):
                raise Rejected(BAD_SIGNATURE, "HMAC-SHA256 signature does not match")
        kind, mechanism = record["targetKind"], record["mechanism"]
        if kind not in contract.TARGET_KINDS:
            raise Rejected(UNKNOWN_TARGET_KIND, f"target kind {kind!r}")
        if mechanism not in contract.MECHANISMS:
            raise Rejected(UNKNOWN_MECHANISM, f"mechanism {mechanism!r}")
        if kind not in MECHANISM_TARGETS[mechanism]:
            raise Rejected(MECHANISM_NOT_FOR_TARGET, f"{mechanism} does not apply to {kind} targets")
        target = self._target(kind, record["targetId"], mechanism, values)
        unknown = sorted(set(values) - set(SETTINGS[mechanism, kind]))
        if unknown:
            raise Rejected(UNKNOWN_SETTING, f"{', '.join(unknown)} not among the {mechanism} settings of {kind} targets")
        if not set(values) - {contract.HOSTAPP_PATH}:
            raise Rejected(BAD_VALUE, "no settings to apply")
        last = self.sequences.last(target.key)
        if record["sequence"] == last and self.sequences.remembers(target.key):
            raise Rejected(DUPLICATE, f"sequence {last} was already applied for {kind}/{record['targetId']}/"
                                      f"{mechanism}; this is a replay of it")
        if record["sequence"] <= last:
            raise Rejected(STALE_SEQUENCE, f"sequence {record['sequence']} is not above {last}, the last applied "
                                           f"for {kind}/{record['targetId']}/{mechanism}")
        highest = self.sequences.highest
        if self.key is None and highest >= 0 and record["sequence"] - highest > MAX_UNSIGNED_JUMP:
            raise Rejected(SEQUENCE_JUMP, f"unsigned sequence {record['sequence']} is more than {MAX_UNSIGNED_JUMP:,} "
                                          f"above {highest}, the highest this node applied")
        return target

    def _target(self, kind: str, target_id: str, mechanism: str, values: dict[str, str]) -> Target:
        try:
            if kind == contract.TARGET_QOS:
                return Target(kind, target_id, mechanism, qos=paths.qos_group(target_id))
            if kind == contract.TARGET_POD:
                return Target(kind, target_id, mechanism, pod_uid=paths.pod_uid(target_id))
            if kind == contract.TARGET_CONTAINER:
                uid, sep, cid = target_id.partition("/")
                if not sep:
                    raise paths.PathProblem(f"container target {target_id!r} is not <pod uid>/<container id>")
                return Target(kind, target_id, mechanism, pod_uid=paths.pod_uid(uid),
                              container_id=paths.container_id(cid))
            if kind == contract.TARGET_HOSTAPP:
                if not paths.SEGMENT.match(target_id):
                    raise paths.PathProblem(f"host application name {target_id!r}")
                if contract.HOSTAPP_PATH not in values:
                    raise paths.PathProblem(f"a hostapp target needs {contract.HOSTAPP_PATH}")
                return Target(kind, target_id, mechanism,
                              cgroup_path=paths.relative_cgroup_path(values[contract.HOSTAPP_PATH]))
            if target_id != self.node_name:
                raise paths.PathProblem(f"node target {target_id!r} is not this node")
            return Target(kind, target_id, mechanism)
        except paths.PathProblem as err:
            raise Rejected(BAD_TARGET, str(err)) from None

    def accepted(self, target: Target, sequence: int) -> None:
        """Remember ``sequence`` as applied for ``target`` (persisted when the store has a directory)."""
        self.sequences.record(target.key, sequence)
