"""The topic topology file (``deploy/topics.yaml``): load, plan and apply.

The file is the single source of topic names, partition counts and configs.
Code refers to topics by their ``id``; :class:`Topology` maps ids to names.
Applying creates what is missing and reports drift (partition count,
replication factor, configs) without changing existing topics: partition
changes and config rewrites are operator decisions (an operator may have
raised a retention on purpose), so for configs it prints the command that
sets just the file's values.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

DEFAULT_FILE = Path(__file__).resolve().parent.parent / "deploy" / "topics.yaml"


class TopologyError(ValueError):
    """The topology file is invalid."""


@dataclasses.dataclass(frozen=True)
class TopicSpec:
    id: str
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]


@dataclasses.dataclass(frozen=True)
class Topology:
    app_id: str
    environment: str
    topics: tuple[TopicSpec, ...]

    def name(self, topic_id: str) -> str:
        return self.spec(topic_id).name

    def spec(self, topic_id: str) -> TopicSpec:
        for topic in self.topics:
            if topic.id == topic_id:
                return topic
        raise KeyError(f"topic id {topic_id!r} is not in the topology")

    def names(self) -> dict[str, str]:
        return {topic.id: topic.name for topic in self.topics}


def load_topology(path: Path | None = None, environment: str = "embedded") -> Topology:
    path = path or DEFAULT_FILE
    doc = yaml.safe_load(path.read_text())
    envs = doc.get("environments", {})
    if environment not in envs:
        raise TopologyError(f"{path}: environment {environment!r} is not defined (have: {', '.join(envs)})")
    env = envs[environment]
    topics, seen = [], set()
    for index, entry in enumerate(doc.get("topics", [])):
        for field in ("id", "name", "partitions"):
            if field not in entry:
                raise TopologyError(f"{path}: topics[{index}].{field} is required")
        if entry["id"] in seen:
            raise TopologyError(f"{path}: topics[{index}].id {entry['id']!r} is duplicated")
        seen.add(entry["id"])
        configs = {**{k: str(v) for k, v in (env.get("configs") or {}).items()},
                   **{k: str(v) for k, v in (entry.get("configs") or {}).items()}}
        topics.append(TopicSpec(
            id=entry["id"], name=entry["name"], partitions=int(entry["partitions"]),
            replication_factor=int(entry.get("replication_factor", env.get("replication_factor", 1))),
            configs=configs,
        ))
    return Topology(app_id=doc["app_id"], environment=environment, topics=tuple(topics))


@dataclasses.dataclass(frozen=True)
class ExistingTopic:
    partitions: int
    replication_factor: int
    configs: dict[str, str]


@dataclasses.dataclass(frozen=True)
class Plan:
    create: tuple[TopicSpec, ...]
    drift: tuple[str, ...]
    in_sync: tuple[str, ...]
    set_configs: tuple[tuple[str, dict[str, str]], ...]
    """Per drifted topic, the configs of the file it lacks: what an operator would set."""


def alter_command(bootstrap: str, topic: str, configs: dict[str, str]) -> str:
    """The ``kafka-configs.sh`` command that sets ``configs`` on ``topic`` and leaves its other configs as
    they are (a value holding commas goes in brackets, as the tool wants)."""
    pairs = ",".join(f"{key}=[{value}]" if "," in value else f"{key}={value}" for key, value in configs.items())
    return (f"kafka-configs.sh --bootstrap-server {bootstrap} --alter --entity-type topics --entity-name {topic} "
            f"--add-config {pairs}")


def plan(topology: Topology, existing: dict[str, ExistingTopic]) -> Plan:
    """Compare the file with the broker: what to create, what drifted."""
    create, drift, in_sync, set_configs = [], [], [], []
    for spec in topology.topics:
        have = existing.get(spec.name)
        if have is None:
            create.append(spec)
            continue
        problems = []
        if have.partitions != spec.partitions:
            problems.append(f"partitions {have.partitions} (want {spec.partitions})")
        if have.replication_factor != spec.replication_factor:
            problems.append(f"replication factor {have.replication_factor} (want {spec.replication_factor})")
        missing = {key: want for key, want in sorted(spec.configs.items()) if have.configs.get(key) != want}
        problems += [f"{key}={have.configs.get(key)!r} (want {want!r})" for key, want in missing.items()]
        if missing:
            set_configs.append((spec.name, missing))
        if problems:
            drift.append(f"{spec.name}: " + ", ".join(problems))
        else:
            in_sync.append(spec.name)
    return Plan(tuple(create), tuple(drift), tuple(in_sync), tuple(set_configs))


async def describe(admin: AIOKafkaAdminClient, names: list[str]) -> dict[str, ExistingTopic]:
    present = set(await admin.list_topics()) & set(names)
    if not present:
        return {}
    existing = {}
    metadata = await admin.describe_topics(sorted(present))
    configs = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, name) for name in sorted(present)])
    by_name = {}
    for response in configs:
        for resource in response.resources:
            by_name[resource[3]] = {entry[0]: entry[1] for entry in resource[4]}
    for topic in metadata:
        partitions = topic["partitions"]
        existing[topic["topic"]] = ExistingTopic(
            partitions=len(partitions),
            replication_factor=len(partitions[0]["replicas"]) if partitions else 0,
            configs=by_name.get(topic["topic"], {}),
        )
    return existing


async def apply(admin: AIOKafkaAdminClient, topology: Topology, dry_run: bool = False) -> Plan:
    """Create the missing topics (unless ``dry_run``) and return the plan."""
    result = plan(topology, await describe(admin, [t.name for t in topology.topics]))
    if result.create and not dry_run:
        response = await admin.create_topics([
            NewTopic(spec.name, spec.partitions, spec.replication_factor, topic_configs=spec.configs)
            for spec in result.create
        ])
        failed = [f"{name}: error {code} {message or ''}".strip()
                  for name, code, message in response.topic_errors if code not in (0, 36)]
        if failed:
            raise TopologyError("could not create topics: " + "; ".join(failed))
    return result
