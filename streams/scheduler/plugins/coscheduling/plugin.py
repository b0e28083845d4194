"""Coscheduling (``core/core.go``): no member of a gang is bound until the whole gang group fits at once.

- **PreEnqueue** (UnschedulableAndUnresolvable): a gang that has not initialised -> "gang has not init,
  gangName: <id>, podName: <ns/pod>"; with match policy once-satisfied and the group once satisfied ->
  pass; else every gang of the group must exist, be initialised and have at least ``min`` pods ->
  "gangGroup [<ids>] basic check: memberGangs [<ids>] child pod not collect enough, current gang: <id>,
  podName: <ns/pod>". Koordinator then admits one representative per group; here the domain tries the
  rest of the group right after one member waits (``siblings``), in the same event.
- **PostFilter** (a member found no node): unless once-satisfied and already satisfied, a Strict gang's
  waiting pods (every gang of the group) are rejected with "GangGroup \"<group>\" gets rejected due to
  member Pod \"<ns/pod>\" is unschedulable with reason \"<message>\", alreadyWaitForBound: <n>" and the
  member's own status is "Gang \"<id>\" gets rejected due to pod is unschedulable"; NonStrict: only
  this pod fails.
- **Permit**: each gang of the group is valid when (only-waiting) waiting >= min, (waiting-and-running)
  waiting + bound >= min, (once-satisfied) waiting >= min or once satisfied; all valid -> Success and every
  waiting pod of the group is allowed; else Wait for the gang's wait time (event time).
- **Unreserve** (a rejected or timed-out member): unless once-satisfied and satisfied, a Strict gang's
  group is rejected: "Gang \"<id>\" gets rejected due to Pod \"<name>\" in Unreserve".

**PodGroup status** (``object_outputs``): after each event, every PodGroup whose gang changed (a member added,
changed, gone, bound or unbound, a member waiting or done waiting, the PodGroup itself) gets the status
Koordinator's PodGroup controller would write (``status.pod_group_status``), and when it differs from the
status last written (or, before any, the one the object shows) the PodGroup record with it in its manifest is
an output, sent to the podgroups topic for the bridge to write to ``/status``. Every scheduling domain gets
every PodGroup, so only a domain that holds members of the gang (or wrote its status before, and so saw them
go) writes it: a PodGroup no domain has a member of yet shows no status (Koordinator's shows Pending), and a
gang whose members are split over domains (different quota trees) gets the status of each in turn.

Once satisfied (Koordinator's irreversible ``OnceResourceSatisfied``) is derived here as "some member is
bound": a restored domain must decide as the live one did, and the domain keeps no plugin memory; so a
gang whose bound members have all ended counts as not satisfied again. Preemption for gangs
(``enablePreemption``) is not implemented: PostFilter never preempts.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.koordinator.labels import GANG_MATCH_ONCE_SATISFIED, GANG_MATCH_ONLY_WAITING, GANG_MATCH_WAITING_AND_RUNNING
from streams.koordinator.labels import GANG_MODE_STRICT, LABEL_POD_GROUP
from streams.objects.args import ArgsError, ArgsReader
from streams.objects.duration import parse_duration
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, SUCCESS, Code, CycleState, Diagnosis, PostFilterResult, Status,
    every_action, register)
from streams.scheduler.plugins.coscheduling.gang import MATCH_POLICIES, Gang, from_pod_group, from_pods, gang_id_of
from streams.scheduler.plugins.coscheduling.status import ENDED, members_of, pod_group_status
from streams.scheduler.state import Cluster, ObjectChanged, PodAssigned, PodChanged, PodUnassigned

NAME = "Coscheduling"
POD_GROUP = "PodGroup"
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@dataclasses.dataclass(frozen=True)
class CoschedulingArgs:
    default_timeout_ms: int = 600_000
    """``defaultTimeout``: how long placed members wait for the rest of their gang (600 s)."""
    default_match_policy: str = GANG_MATCH_ONCE_SATISFIED
    """``defaultMatchPolicy``."""

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "CoschedulingArgs":
        reader = ArgsReader(NAME, raw, {"defaultTimeout", "controllerWorkers", "enablePreemption",
                                        "awareNetworkTopology", "defaultMatchPolicy", "skipCheckScheduleCycle"})
        timeout = reader.raw.get("defaultTimeout")
        try:
            timeout_ms = parse_duration(timeout) if timeout is not None else 600_000
        except ValueError as error:
            raise reader.fail("defaultTimeout", str(error)) from None
        if timeout_ms < 0:
            raise reader.fail("defaultTimeout", "must be greater than or equal to 0")
        if reader.integer("controllerWorkers", 1) < 1:
            raise reader.fail("controllerWorkers", "must be greater than or equal to 1")
        if reader.boolean("enablePreemption", False):
            raise ArgsError(f"{NAME}: enablePreemption: gang preemption is not supported by koordstream")
        policy = reader.string("defaultMatchPolicy", GANG_MATCH_ONCE_SATISFIED)
        if policy not in MATCH_POLICIES:
            raise reader.fail("defaultMatchPolicy", f"must be one of {', '.join(MATCH_POLICIES)}")
        return cls(timeout_ms, policy)


class Coscheduling:
    name = NAME
    Args = CoschedulingArgs
    watched_kinds = frozenset({POD_GROUP})
    events_to_register = register(NODE_ADD, NODE_UPDATE, ASSIGNED_POD_DELETE, *every_action(POD_GROUP))

    def __init__(self, args: CoschedulingArgs, cluster: Cluster) -> None:
        self.args = args
        self.cluster = cluster
        self.members: dict[str, set[str]] = {}
        """gang id -> keys of its pods."""
        self._gangs: dict[str, Gang] = {}
        for key, pod in cluster.pods.items():
            self._add(key, pod)
        self._changed: set[str] = set(cluster.objects.get(POD_GROUP, {}))
        """Gang ids whose PodGroup status may have changed since the last ``object_outputs``."""
        self._waited: set[str] = set()
        """Gang ids that had waiting members at the last ``object_outputs`` (a member done waiting changes
        ``scheduled`` without a change of its own)."""
        self._written: dict[str, dict] = {}
        """Gang id -> the PodGroup status last written back."""
        self._ended: dict[str, dict[str, int]] = {
            gang_id: _ended_in(record) for gang_id, record in cluster.objects.get(POD_GROUP, {}).items()}
        """Gang id -> members that ended, by phase: from the status the object shows when built (a restored
        domain), then counted as they end."""

    # -- the gangs ---------------------------------------------------------------------

    def _add(self, key: str, pod: PodInfo) -> None:
        gang_id = gang_id_of(pod)
        if gang_id:
            self.members.setdefault(gang_id, set()).add(key)
            self._gangs.pop(gang_id, None)

    def observe(self, change: object) -> None:
        if isinstance(change, PodChanged):
            for pod in (change.old, change.new):
                gang_id = gang_id_of(pod) if pod is not None else None
                if gang_id:
                    self._gangs.pop(gang_id, None)
                    self.members.get(gang_id, set()).discard(change.key)
                    self._changed.add(gang_id)
            gang_id = gang_id_of(change.old) if change.old is not None else None
            if gang_id and change.ended in ENDED:
                ended = self._ended.setdefault(gang_id, {})
                ended[change.ended] = ended.get(change.ended, 0) + 1
            if change.new is not None:
                self._add(change.key, change.new)
        elif isinstance(change, ObjectChanged) and change.kind == POD_GROUP:
            self._gangs.pop(change.name, None)
            self._changed.add(change.name)
            if change.new is None:
                self._written.pop(change.name, None)
                self._ended.pop(change.name, None)
            elif change.old is None:
                self._ended[change.name] = _ended_in(change.new)
        elif isinstance(change, (PodAssigned, PodUnassigned)):
            gang_id = gang_id_of(change.pod)
            if gang_id:
                self._changed.add(gang_id)

    def gang(self, gang_id: str) -> Gang:
        gang = self._gangs.get(gang_id)
        if gang is None:
            group = self.cluster.objects.get(POD_GROUP, {}).get(gang_id)
            pods = [self.cluster.pods[key] for key in self.members.get(gang_id, ())]
            if group is not None:
                gang = from_pod_group(gang_id, group, self.args.default_match_policy, self.args.default_timeout_ms)
            elif any(_by_pod_group(pod) for pod in pods):
                gang = Gang(gang_id, False, wait_ms=0)
            else:
                gang = from_pods(gang_id, pods, self.args.default_match_policy, self.args.default_timeout_ms)
            self._gangs[gang_id] = gang
        return gang

    def _children(self, gang_id: str) -> list[str]:
        return sorted(self.members.get(gang_id, ()))

    def _waiting(self, gang_id: str) -> list[str]:
        return [key for key in self._children(gang_id) if key in self.cluster.waiting]

    def _bound(self, gang_id: str) -> list[str]:
        return [key for key in self._children(gang_id)
                if key in self.cluster.assignment and key not in self.cluster.waiting]

    def _satisfied(self, gang: Gang) -> bool:
        """Once satisfied: some member of the group is bound (see the module docstring)."""
        return any(self._bound(gang_id) for gang_id in gang.groups)

    def _skip_checks(self, gang: Gang) -> bool:
        return gang.match_policy == GANG_MATCH_ONCE_SATISFIED and self._satisfied(gang)

    # -- extension points --------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gang_id = gang_id_of(pod)
        if gang_id is None:
            return SUCCESS
        gang = self.gang(gang_id)
        if not gang.initialized:
            return Status(UNRESOLVABLE, (f"gang has not init, gangName: {gang_id}, podName: {pod.key}",), NAME)
        if self._skip_checks(gang):
            return SUCCESS
        missing, not_init, short = [], [], False
        for member_id in gang.groups:
            if not self.members.get(member_id) and member_id not in self.cluster.objects.get(POD_GROUP, {}):
                missing.append(member_id)
                continue
            member = self.gang(member_id)
            if not member.initialized:
                not_init.append(member_id)
            elif len(self.members.get(member_id, ())) < member.min:
                short = True
        failed = ([f"memberGangs {_list(missing)} doesn't exists"] if missing else []) + \
                 ([f"memberGangs {_list(not_init)} has not init"] if not_init else []) + \
                 ([f"memberGangs {_list(gang.groups)} child pod not collect enough"] if short else [])
        if failed:
            return Status(UNRESOLVABLE, (f"gangGroup {_list(gang.groups)} basic check: {', '.join(failed)}, "
                                         f"current gang: {gang_id}, podName: {pod.key}",), NAME)
        return SUCCESS

    def post_filter(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> PostFilterResult:
        gang_id = gang_id_of(pod)
        if gang_id is None:
            return PostFilterResult(Status(Code.UNSCHEDULABLE, plugin=NAME))
        gang = self.gang(gang_id)
        if gang.mode != GANG_MODE_STRICT or self._skip_checks(gang):
            return PostFilterResult(Status(Code.UNSCHEDULABLE, plugin=NAME))
        waiting = [key for member in gang.groups for key in self._waiting(member)]
        message = (f'GangGroup "{gang.group_id}" gets rejected due to member Pod "{pod.key}" is unschedulable '
                   f'with reason "{diagnosis.message}", alreadyWaitForBound: {len(waiting)}')
        for key in waiting:
            self.cluster.waiting.reject(key, NAME, message)
        return PostFilterResult(Status.unschedulable(f'Gang "{gang_id}" gets rejected due to pod is unschedulable',
                                                     NAME))

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        gang_id = gang_id_of(pod)
        if gang_id is None:
            return
        gang = self.gang(gang_id)
        if gang.mode != GANG_MODE_STRICT or self._skip_checks(gang):
            return
        message = f'Gang "{gang_id}" gets rejected due to Pod "{pod.name}" in Unreserve'
        for member in gang.groups:
            for key in self._waiting(member):
                if key != pod.key:
                    self.cluster.waiting.reject(key, NAME, message)

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, int]:
        gang_id = gang_id_of(pod)
        if gang_id is None:
            return SUCCESS, 0
        gang = self.gang(gang_id)
        if not gang.initialized or not all(self._valid(self.gang(member), pod.key) for member in gang.groups):
            return Status(Code.WAIT, (self._progress(gang, pod.key),), NAME), gang.wait_ms
        for member in gang.groups:
            for key in self._waiting(member):
                self.cluster.waiting.allow(key, NAME)
        return SUCCESS, 0

    def _progress(self, gang: Gang, assumed: str) -> str:
        """How far each gang of the group is: 'gang "ns/a": 2 of min 4 waiting, 0 bound; ...'."""
        parts = []
        for member_id in gang.groups or (gang.id,):
            member = self.gang(member_id)
            waiting = len(self._waiting(member_id)) + (assumed in self.members.get(member_id, ())
                                                       and assumed not in self.cluster.waiting)
            parts.append(f'gang "{member_id}": {waiting} of min {member.min} waiting, '
                         f'{len(self._bound(member_id))} bound, {len(self.members.get(member_id, ()))} known')
        return f'gang group "{gang.group_id or gang.id}" incomplete: ' + "; ".join(parts)

    def _valid(self, gang: Gang, assumed: str) -> bool:
        """``isGangValidForPermit``; ``assumed`` (the pod in Permit) counts as waiting."""
        if not gang.initialized:
            return False
        waiting = len(self._waiting(gang.id)) + (assumed in self.members.get(gang.id, ())
                                                 and assumed not in self.cluster.waiting)
        if gang.match_policy == GANG_MATCH_ONLY_WAITING:
            return waiting >= gang.min
        if gang.match_policy == GANG_MATCH_WAITING_AND_RUNNING:
            return waiting + len(self._bound(gang.id)) >= gang.min
        return waiting >= gang.min or self._satisfied(gang)

    def object_outputs(self) -> list[tuple[str, dict]]:
        """The PodGroup records whose status changed (see the module docstring), in gang id order."""
        waiting = {gang_id for key in self.cluster.waiting.pods
                   if key in self.cluster.pods and (gang_id := gang_id_of(self.cluster.pods[key]))}
        candidates, self._changed, self._waited = self._changed | self._waited | waiting, set(), waiting
        groups = self.cluster.objects.get(POD_GROUP, {})
        out = []
        for gang_id in sorted(candidates):
            record = groups.get(gang_id)
            if record is None or not (self.members.get(gang_id) or self._ended.get(gang_id)
                                      or gang_id in self._written):
                continue
            manifest = json.loads(record.get("manifest") or "{}")
            shown = self._written.get(gang_id, manifest.get("status") or {})
            pods = [self.cluster.pods[key] for key in self._children(gang_id)]
            members = members_of(pods, self._scheduled(gang_id), self._ended.get(gang_id, {}))
            status = pod_group_status(shown, int(record.get("minMember") or 0), members, self.cluster.now_ms)
            if status == shown:
                continue
            self._written[gang_id] = status
            out.append((POD_GROUP, {**record, "manifest": json.dumps({**manifest, "status": status}, sort_keys=True,
                                                                      separators=(",", ":"))}))
        return out

    def _scheduled(self, gang_id: str) -> int:
        """``GetBoundPodNumber``: members bound, here or on the API server (a pod that has ended keeps counting,
        as Koordinator's gang keeps it among its bound children until it is deleted)."""
        bound = set(self._bound(gang_id))
        return sum(key in bound or bool(self.cluster.pods[key].node_name) for key in self._children(gang_id))

    def siblings(self, pod: PodInfo) -> list[str]:
        gang_id = gang_id_of(pod)
        if gang_id is None:
            return []
        gang = self.gang(gang_id)
        return [key for member in gang.groups for key in self._children(member)
                if key != pod.key and key not in self.cluster.assignment]


def _list(ids) -> str:
    """Go's ``%v`` of a string slice: "[a b]"."""
    return "[" + " ".join(ids) + "]"


def _ended_in(record: Mapping) -> dict[str, int]:
    """Members that ended, by phase, as the PodGroup's status shows them."""
    try:
        status = json.loads(record.get("manifest") or "{}").get("status") or {}
    except (ValueError, AttributeError):
        status = {}
    return {phase: int(status.get(phase.lower()) or 0) for phase in ENDED if status.get(phase.lower())}


def _by_pod_group(pod: PodInfo) -> bool:
    return bool(pod.labels.get(LABEL_POD_GROUP))
