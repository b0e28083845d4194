"""Worker roles: which of the four agents a worker runs, and the Kafka names that follow from it.

Everything a worker names in Kafka derives from its Faust app id: its consumer group (the app id),
its tables' changelogs (``<app id>-<table>-changelog``) and its transactional ids
(``<app id>-<group>-<partition>``). A role is a name and a set of agents; its app id is the topology's
``app_id`` for the role ``all`` (every agent in one worker, as deployed until now, so existing
deployments and ``deploy/topics.yaml``'s changelogs keep their names) and ``<app_id>-<role>`` for any
other, so workers of different roles never share a group, a changelog or a transactional id.
"""

from __future__ import annotations

import dataclasses

from streams.topology import Topology

AGENTS = ("router", "domains", "scheduling", "node")
"""The agents a worker can run (``streams.app``). Every worker also publishes the clock ticks
(``streams.agents.ticks``): a worker that consumed nothing would not start (Faust subscribes to no topic and
aiokafka refuses that), and ticks from several workers are harmless."""
TABLES = {"domains": "routing-state", "scheduling": "scheduling-state", "node": "node-state"}
"""The table each agent that keeps one writes (its changelog is named after it)."""
ALL = "all"


class UnknownRole(ValueError):
    """A role name that is not declared."""


@dataclasses.dataclass(frozen=True)
class Role:
    name: str
    agents: tuple[str, ...]

    def app_id(self, topology: Topology) -> str:
        return topology.app_id if self.name == ALL else f"{topology.app_id}-{self.name}"

    def topology(self, topology: Topology) -> Topology:
        """``topology`` as this role's worker sees it: the changelogs of its tables, under its app id, and no
        other changelog (``<app_id>-<table>-changelog`` in the file)."""
        own = {f"{topology.app_id}-{TABLES[agent]}-changelog": f"{self.app_id(topology)}-{TABLES[agent]}-changelog"
               for agent in self.agents if agent in TABLES}
        topics = tuple(dataclasses.replace(spec, name=own[spec.name]) if spec.name in own else spec
                       for spec in topology.topics if spec.name in own or not _is_changelog(topology, spec.name))
        return dataclasses.replace(topology, topics=topics)


def _is_changelog(topology: Topology, name: str) -> bool:
    return name.startswith(f"{topology.app_id}-") and name.endswith("-changelog")


ROLES = {ALL: Role(ALL, AGENTS), **{agent: Role(agent, (agent,)) for agent in AGENTS}}
"""The declared roles: every agent in one worker, or one agent a worker."""


def role(name: str) -> Role:
    """The declared role ``name``."""
    try:
        return ROLES[name]
    except KeyError:
        raise UnknownRole(f"role {name!r} is not declared (have: {', '.join(ROLES)})") from None


INBOX_READERS = {"inbox-routing": "domains", "inbox-scheduling": "scheduling", "inbox-node": "node",
                 "pods": "domains"}
"""The agent that reads each inbox (topology id), and the source topics the domain router reads itself
(``routing.DOMAIN_ROUTER_SOURCES``); the router reads every other source topic."""


def reader(topic_id: str) -> str:
    """The agent whose consumer group commits ``topic_id`` (an inbox or the pods, else a source the router
    reads)."""
    return INBOX_READERS.get(topic_id, "router")
