"""Who may write what (``deploy/acls.yaml``): load, turn into Kafka ACL bindings, apply.

The file grants roles (worker, node agent, bridge, projection, operator) read and
write on topics named by their topology id, read on consumer groups and write
on transactional-id prefixes; :func:`bindings` turns that into Kafka ACL
bindings on the real names (``ALLOW`` from any host), with ``{app_id}`` read
from the topology. Kafka implies DESCRIBE from READ and WRITE, and since
KIP-679 an idempotent producer needs only WRITE on some topic, so nothing else
is granted. Under ``StandardAuthorizer`` a principal without a matching ACL is
refused, so these grants are everything each principal may do.

Applying adds the missing bindings and reports the ones the broker has for the
file's principals that the file does not list; like the topics, nothing is
removed. aiokafka's admin client has no ACL methods, so the requests are its
protocol structs (CreateAcls v1 and DescribeAcls v1, which Kafka 4 still serves)
sent through the admin client's connection.

Whether ACLs are enforced is the broker's ``authorizer.class.name``
(DescribeConfigs of one broker): Kafka reports it empty without an authorizer,
and the embedded Tansu reports no broker configs at all, although it answers
DescribeAcls (with nothing) and so cannot be told apart by that. Either way the
ACLs are "not applied", which is not an error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import yaml
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import IncompatibleBrokerVersion, SecurityDisabled, for_code
from aiokafka.protocol.admin import CreateAclsRequest_v1, DescribeAclsRequest
from aiokafka.protocol.api import Request

from streams import roles as worker_roles
from streams.topology import DEFAULT_FILE as DEFAULT_TOPOLOGY_FILE
from streams.topology import Topology

FILE_NAME = "acls.yaml"
RESOURCE_TYPES = {"TOPIC": 2, "GROUP": 3, "TRANSACTIONAL_ID": 5}
PATTERN_TYPES = {"LITERAL": 3, "PREFIXED": 4}
OPERATIONS = {"READ": 3, "WRITE": 4}
ALLOW = 3
"""Kafka's codes (``ResourceType``, ``PatternType``, ``AclOperation``, ``AclPermissionType``)."""
ANY = 1
"""The ANY code of every one of those enums, for a DescribeAcls filter."""
ANY_HOST = "*"
AUTHORIZER_CONFIG = "authorizer.class.name"
VISIBLE_TIMEOUT_S = 30.0
VISIBLE_POLL_S = 0.1
"""How long and how often ``apply`` checks that the ACLs it created are shown (``_until_described``)."""

ROLE_FIELDS = {"about", "principals", "read", "write", "groups", "transactional_id_prefixes"}


class AclError(ValueError):
    """The ACL file is invalid or does not fit the topology."""


def beside(topology_file: Path | None) -> Path:
    """The ACL file that goes with a topology file: ``acls.yaml`` in its folder (``deploy/`` by default)."""
    return (topology_file or DEFAULT_TOPOLOGY_FILE).parent / FILE_NAME


@dataclasses.dataclass(frozen=True, order=True)
class Binding:
    """One ACL: ``principal`` may do ``operation`` on the resource, from any host."""

    principal: str
    resource_type: str
    name: str
    pattern: str
    operation: str

    def __str__(self) -> str:
        prefix = "*" if self.pattern == "PREFIXED" else ""
        return f"{self.principal} {self.operation} {self.resource_type.lower()} {self.name}{prefix}"


@dataclasses.dataclass(frozen=True)
class Role:
    name: str
    principals: tuple[str, ...]
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    transactional_id_prefixes: tuple[str, ...] = ()


def load_roles(path: Path | None = None) -> tuple[Role, ...]:
    """The roles of the ACL file (default: the shipped one), checked for shape (not yet against a
    topology: :func:`bindings`)."""
    path = path or beside(None)
    doc = yaml.safe_load(path.read_text()) or {}
    roles, seen = [], {}
    for name, entry in (doc.get("roles") or {}).items():
        where = f"{path}: roles.{name}"
        if not isinstance(entry, dict):
            raise AclError(f"{where} must be a mapping")
        unknown = set(entry) - ROLE_FIELDS
        if unknown:
            raise AclError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        fields = {}
        for field in ROLE_FIELDS - {"about"}:
            values = entry.get(field) or []
            if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
                raise AclError(f"{where}.{field} must be a list of names")
            fields[field] = tuple(values)
        if not fields["principals"]:
            raise AclError(f"{where}.principals is required")
        for principal in fields["principals"]:
            if not principal.startswith("User:") or principal == "User:":
                raise AclError(f"{where}: principal {principal!r} must be User:<name>")
            if principal in seen:
                raise AclError(f"{where}: principal {principal} is already in role {seen[principal]}")
            seen[principal] = name
        roles.append(Role(name=name, **fields))
    if not roles:
        raise AclError(f"{path}: no roles")
    return tuple(roles)


def bindings(roles: tuple[Role, ...], topology: Topology,
             worker_role: worker_roles.Role = worker_roles.ROLES[worker_roles.ALL]) -> tuple[Binding, ...]:
    """Every ACL the roles grant, on the topology's topic names, sorted; unknown topic ids are an error.

    For a deployment by worker role (``streams.roles``), ``{app_id}`` is that role's app id (its consumer group
    and transactional ids) and a changelog is the role's own (``<app_id>-<role>-<table>-changelog``); the
    changelogs of the other roles' tables are left to their own ``koord topics apply --role``."""
    known = topology.names()
    names = worker_role.topology(topology).names()
    app_id = worker_role.app_id(topology)

    def resolve(value: str) -> str:
        return value.replace("{app_id}", app_id)

    found = set()
    for role in roles:
        unknown = [topic for topic in (*role.read, *role.write) if topic not in known]
        if unknown:
            raise AclError(f"role {role.name}: topic id(s) {', '.join(unknown)} not in the topology")
        for principal in role.principals:
            found.update(Binding(principal, "TOPIC", names[t], "LITERAL", "READ") for t in role.read if t in names)
            found.update(Binding(principal, "TOPIC", names[t], "LITERAL", "WRITE") for t in role.write if t in names)
            found.update(Binding(principal, "GROUP", resolve(g), "LITERAL", "READ") for g in role.groups)
            found.update(Binding(principal, "TRANSACTIONAL_ID", resolve(p), "PREFIXED", "WRITE")
                         for p in role.transactional_id_prefixes)
    return tuple(sorted(found))


def writers(acls: tuple[Binding, ...], topic: str) -> set[str]:
    """The principals the ACLs let write ``topic`` (a topic name)."""
    return {b.principal for b in acls
            if b.resource_type == "TOPIC" and b.operation == "WRITE"
            and (b.name == topic if b.pattern == "LITERAL" else topic.startswith(b.name))}


@dataclasses.dataclass(frozen=True)
class AclPlan:
    applied: bool
    """False when the broker has no authorizer: nothing below was compared or created."""
    reason: str = ""
    create: tuple[Binding, ...] = ()
    present: tuple[Binding, ...] = ()
    extra: tuple[Binding, ...] = ()
    """ALLOW bindings of the kinds above that the broker has for the file's principals and the file does
    not grant (left in place)."""


def plan(want: tuple[Binding, ...], have: set[Binding]) -> AclPlan:
    """What to create, what is there, what the broker has beyond the file (for the file's principals)."""
    principals = {b.principal for b in want}
    return AclPlan(applied=True,
                   create=tuple(b for b in want if b not in have),
                   present=tuple(b for b in want if b in have),
                   extra=tuple(sorted(b for b in have if b.principal in principals and b not in set(want))))


class CreateAcls(Request[CreateAclsRequest_v1]):
    """CreateAcls v1 with any number of creations (aiokafka's own ``CreateAclsRequest`` sends one)."""

    API_KEY = 30

    def __init__(self, acls: tuple[Binding, ...]):
        self.acls = acls

    def build(self, request_struct_class: type[CreateAclsRequest_v1]) -> CreateAclsRequest_v1:
        return request_struct_class([
            (RESOURCE_TYPES[b.resource_type], b.name, PATTERN_TYPES[b.pattern], b.principal, ANY_HOST,
             OPERATIONS[b.operation], ALLOW) for b in self.acls])


class NoAuthorizer(Exception):
    """The broker enforces no ACLs."""


async def authorizer(admin: AIOKafkaAdminClient) -> str:
    """The authorizer class of a broker of the cluster, "" when it has none."""
    broker = (await admin.describe_cluster())["brokers"][0]["node_id"]
    [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker))])
    for error_code, error_message, _, _, entries in response.resources:
        if error_code:
            raise for_code(error_code)(error_message)
        for entry in entries:
            if entry[0] == AUTHORIZER_CONFIG:
                return entry[1] or ""
    return ""


async def describe(admin: AIOKafkaAdminClient) -> set[Binding]:
    """Every ALLOW binding of the kinds this module writes, or :class:`NoAuthorizer`."""
    if not await authorizer(admin):
        raise NoAuthorizer(f"the broker has no authorizer ({AUTHORIZER_CONFIG} is not set)")
    return await _bindings(admin)


async def _bindings(admin: AIOKafkaAdminClient) -> set[Binding]:
    """The bindings DescribeAcls answers (the broker known to have an authorizer), or :class:`NoAuthorizer`."""
    request = DescribeAclsRequest(ANY, None, ANY, None, None, ANY, ANY)
    try:
        response = await admin._send_request(request)
    except IncompatibleBrokerVersion as error:
        raise NoAuthorizer(f"the broker does not support ACLs ({error})") from None
    if response.error_code == SecurityDisabled.errno:
        raise NoAuthorizer("the broker has no authorizer (DescribeAcls answered SECURITY_DISABLED)")
    if response.error_code:
        raise for_code(response.error_code)(response.error_message)
    types = {code: name for name, code in RESOURCE_TYPES.items()}
    patterns = {code: name for name, code in PATTERN_TYPES.items()}
    operations = {code: name for name, code in OPERATIONS.items()}
    found = set()
    for resource_type, name, pattern, acls in response.resources:
        for principal, host, operation, permission in acls:
            if (resource_type in types and pattern in patterns and operation in operations
                    and permission == ALLOW and host == ANY_HOST):
                found.add(Binding(principal, types[resource_type], name, patterns[pattern], operations[operation]))
    return found


async def apply(admin: AIOKafkaAdminClient, want: tuple[Binding, ...], dry_run: bool = False) -> AclPlan:
    """Create the missing bindings (unless ``dry_run``) and return the plan; ``applied`` is False without
    an authorizer."""
    try:
        have = await describe(admin)
    except NoAuthorizer as reason:
        return AclPlan(applied=False, reason=str(reason))
    result = plan(want, have)
    if result.create and not dry_run:
        response = await admin._send_request(CreateAcls(result.create))
        failed = [f"{binding}: {for_code(code).message} {message or ''}".strip()
                  for binding, (code, message) in zip(result.create, response.creation_responses) if code]
        if failed:
            raise AclError("could not create ACLs: " + "; ".join(failed))
        await _until_described(admin, set(result.create))
    return result


async def _until_described(admin: AIOKafkaAdminClient, created: set[Binding]) -> None:
    """Until DescribeAcls shows every binding of ``created``. Kafka answers CreateAcls before its authorizer
    has applied them from the metadata log, so a principal that connects just after ``apply`` (a worker
    started next, a second ``apply``) could be refused or find them missing; past
    :data:`VISIBLE_TIMEOUT_S` an error names how many are still not shown."""
    deadline = time.monotonic() + VISIBLE_TIMEOUT_S
    while missing := created - await _bindings(admin):
        if time.monotonic() > deadline:
            raise AclError(f"{len(missing)} created ACLs not shown by the broker after {VISIBLE_TIMEOUT_S:g} s, "
                           f"e.g. {sorted(missing)[0]}")
        await asyncio.sleep(VISIBLE_POLL_S)
