"""What koordstream asks a YARN ResourceManager: its NodeManagers (REST) and a node resource update (admin).

Reads ``GET ws/v1/cluster/nodes`` (Hadoop's RM REST API): per NodeManager its id (``host:port``),
state, allocated memory and vcores, free memory and vcores, and container count; capacity =
allocated + free, as the ResourceManager's ``SchedulerNode`` keeps it. Field names are the
documented JAXB ones (``id``, ``usedMemoryMB``, ``availMemoryMB``) or, as Hadoop 3.4's Jackson
writer spells them, ``nodeId``, ``usedMemory``, ``availableMemory``; the list is ``nodes.node`` or
``nodes``.

Writes with the admin protocol's ``UpdateNodeResource`` (``yarn rmadmin -updateNodeResource
<node id> <memory MB> <vcores> -1``, Hadoop's ``RMAdminCLI`` from the same jars), the call
yarn-copilot makes over protobuf RPC. Hadoop 3.4.1 also has ``POST ws/v1/cluster/nodes/{id}/resource``,
but its JSON reader cannot bind ``ResourceOptionInfo`` (Jackson sees only the read-only
``resourceOption`` property) and it has no XML reader, so the REST write is unusable in that release.
The overcommit timeout -1 keeps running containers when the new total is below what is allocated, as
yarn-copilot leaves it unset (the protobuf default -1).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from streams.yarn.jars import java_command

RM_ADMIN_CLI = "org.apache.hadoop.yarn.client.cli.RMAdminCLI"
ADMIN_TIMEOUT_S = 60.0
NO_OVERCOMMIT_TIMEOUT = -1


class ResourceManagerError(RuntimeError):
    """The ResourceManager is unreachable or answered something that is not its REST API."""


class UpdateRefused(RuntimeError):
    """The ResourceManager refused ``UpdateNodeResource``; the message is YARN's."""


@dataclasses.dataclass(frozen=True)
class NodeManagerReport:
    node_id: str
    """``host:port`` of the NodeManager (YARN's NodeId)."""
    host: str
    state: str
    capacity_vcores: int
    capacity_memory_mb: int
    allocated_vcores: int
    allocated_memory_mb: int
    containers: int


def _int(node: dict, field: str, alias: str | None = None) -> int:
    value = node.get(field, node.get(alias) if alias else None)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ResourceManagerError(f"nodes[{node.get('id')!r}].{field}: expected a non-negative number, got {value!r}")
    return int(value)


def parse_nodes(payload: object) -> list[NodeManagerReport]:
    """The NodeManagers of a ``ws/v1/cluster/nodes`` answer; ResourceManagerError naming the bad field."""
    if not isinstance(payload, dict) or "nodes" not in payload:
        raise ResourceManagerError("ws/v1/cluster/nodes: expected an object with 'nodes'")
    nodes = payload["nodes"]
    if isinstance(nodes, dict):
        nodes = nodes.get("node") or []
    if nodes is None:
        nodes = []
    if not isinstance(nodes, list):
        raise ResourceManagerError("ws/v1/cluster/nodes: 'nodes' is not a list")
    reports = []
    for node in nodes:
        if not isinstance(node, dict):
            raise ResourceManagerError("ws/v1/cluster/nodes: a node is not an object")
        node_id = node.get("id", node.get("nodeId"))
        if not isinstance(node_id, str) or ":" not in node_id:
            raise ResourceManagerError(f"nodes[].id: expected 'host:port', got {node_id!r}")
        used_vcores, used_mb = _int(node, "usedVirtualCores"), _int(node, "usedMemoryMB", "usedMemory")
        reports.append(NodeManagerReport(
            node_id=node_id, host=node_id.rsplit(":", 1)[0], state=str(node.get("state") or ""),
            capacity_vcores=used_vcores + _int(node, "availableVirtualCores"),
            capacity_memory_mb=used_mb + _int(node, "availMemoryMB", "availableMemory"),
            allocated_vcores=used_vcores, allocated_memory_mb=used_mb,
            containers=_int(node, "numContainers")))
    return reports


def list_node_managers(rm_url: str, timeout_s: float = 5.0) -> list[NodeManagerReport]:
    """``GET {rm_url}/ws/v1/cluster/nodes``, parsed; ResourceManagerError when down or answering garbage."""
    request = urllib.request.Request(f"{rm_url.rstrip('/')}/ws/v1/cluster/nodes",
                                     headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            body = answer.read()
    except (OSError, urllib.error.URLError) as error:
        raise ResourceManagerError(f"ResourceManager {rm_url} unreachable: {error}") from None
    try:
        payload = json.loads(body)
    except ValueError:
        raise ResourceManagerError(f"ResourceManager {rm_url} answered no JSON: {body[:200]!r}") from None
    return parse_nodes(payload)


def update_node_resource(conf: Path, node_id: str, memory_mb: int, vcores: int) -> None:
    """``UpdateNodeResource`` of one NodeManager through ``RMAdminCLI`` (``conf``: a folder with a
    ``yarn-site.xml`` naming the ResourceManager's admin address); UpdateRefused with YARN's message."""
    command = java_command(conf, RM_ADMIN_CLI, "-Xmx96m", "-updateNodeResource", node_id, str(memory_mb),
                           str(vcores), str(NO_OVERCOMMIT_TIMEOUT))
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=ADMIN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ResourceManagerError(f"rmadmin -updateNodeResource {node_id} did not answer in {ADMIN_TIMEOUT_S:.0f} s")
    if result.returncode != 0:
        lines = [line for line in (result.stdout + result.stderr).splitlines()
                 if line.strip() and not line.lstrip().startswith("at ") and " INFO " not in line
                 and " WARN " not in line]
        message = lines[-1].strip() if lines else f"exit status {result.returncode}"
        if "Connection refused" in message or "ConnectException" in message:
            raise ResourceManagerError(f"ResourceManager admin unreachable: {message}")
        raise UpdateRefused(message)

