"""Worker roles: the default role keeps today's names; any other role runs only its agents, under names of
its own that its topology (``Role.topology``) creates."""

from __future__ import annotations

import pytest

import streams.app
from streams.app import create_app
from streams.roles import ALL, ROLES, TABLES, UnknownRole, role
from streams.topology import load_topology

TOPOLOGY = load_topology()


@pytest.fixture(autouse=True)
def _no_monitor(monkeypatch):
    """Faust's Prometheus series are registered once a process; these apps never run."""
    monkeypatch.setattr(streams.app, "install_monitor", lambda app: None)


def _changelogs(topology) -> set[str]:
    return {spec.name for spec in topology.topics if spec.id.startswith("changelog-")}


def test_the_default_role_runs_every_agent_under_the_topology_app_id():
    app = create_app("127.0.0.1:1", TOPOLOGY)
    assert app.conf.id == TOPOLOGY.app_id == ROLES[ALL].app_id(TOPOLOGY)
    assert sorted(app.agents) == ["koord-domains", "koord-node", "koord-router", "koord-scheduling"]
    assert {table.changelog_topic.get_topic_name() for table in app.tables.values()} == _changelogs(TOPOLOGY)
    assert ROLES[ALL].topology(TOPOLOGY) == TOPOLOGY


@pytest.mark.parametrize("name", [name for name in ROLES if name != ALL])
def test_a_role_runs_its_agents_under_its_own_names_which_its_topology_declares(name):
    app = create_app("127.0.0.1:1", TOPOLOGY, role=role(name))
    assert app.conf.id == f"{TOPOLOGY.app_id}-{name}"
    assert sorted(app.agents) == [f"koord-{name}"]
    assert sorted(app.tables) == sorted(TABLES[agent] for agent in role(name).agents if agent in TABLES)
    changelogs = {table.changelog_topic.get_topic_name() for table in app.tables.values()}
    assert changelogs == _changelogs(role(name).topology(TOPOLOGY))
    assert not changelogs & _changelogs(TOPOLOGY), "no role shares a changelog with another"


def test_an_unknown_role_is_named():
    with pytest.raises(UnknownRole, match="'scheduler' is not declared"):
        role("scheduler")
