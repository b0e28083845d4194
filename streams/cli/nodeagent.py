"""``koord node-agent``: collect this host's node, pod and device metrics and publish them (``node_agent``).

One flag per field of ``node_agent.settings.AgentSettings``, with its default and its
docstring as help (``streams.cli.fieldoptions``).
``--once`` samples for one collect interval and prints the Node, NodeMetric,
NodeResourceTopology and Device objects it would send, without a broker.

Unless ``--no-actuate``, the agent also applies the actuations addressed to
this node (``node_agent.actuator``) and publishes their acknowledgements;
``KOORD_ACTUATION_KEY`` set means unsigned or badly signed actuations are
refused. ``--dry-run`` prints, one JSON line per actuation, what would be
written, and writes, persists and acknowledges nothing. With actuation on and
``--protection-after`` above 0, the agent also keeps the last slo-controller-config
and protects the node itself when the stream is silent or unreachable
(``node_agent/actuator/protection.py``). ``--kube-api`` also keeps this node's
Device and NodeMetric objects on the API server (``node_agent/kubereport.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time

import click
from lightkube.core.exceptions import ConfigError

from node_agent.actuator.actuator import Actuator, OffsetStore, run_actuator, submit_ack
from node_agent.actuator.protection import ConfigStore, Protection, follow_configs, run_protection
from node_agent.actuator.waiting import run_waiting
from node_agent.agent import NodeAgent
from node_agent.collectors.hostapps import HostApplicationError
from node_agent.kubereport import KubeReporter
from node_agent.publisher import Publisher, encode_manifest
from node_agent.run import follow_pods, run_agent
from node_agent.settings import AgentSettings, SettingsError
from node_agent.yarnqos import YarnQoS, run_yarn_qos
from streams.actuation import signing_key
from streams.bridge.api import KubeApi
from streams.cli import context
from streams.cli.fieldoptions import settings_options
from streams.cli.options import metrics_options
from streams.metrics import serve
from streams.cli.output import emit
from streams.stopsignals import stop_on_signals


@click.command("node-agent")
@click.option("--once", is_flag=True, help="Sample once, print the objects it would send, exit (no broker).")
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), default="json", show_default=True,
              help="Format of --once.")
@settings_options(AgentSettings)
@metrics_options
def node_agent(once: bool, output: str, metrics_port: int, metrics_host: str, **fields) -> None:
    """Collect this host's node, pod and device usage; publish Node, NodeMetric and Device objects."""
    settings = AgentSettings(**fields)
    try:
        agent = NodeAgent(settings)
    except (SettingsError, HostApplicationError) as err:
        raise click.UsageError(str(err)) from None
    if once:
        _once(agent, output)
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(metrics_port, metrics_host)
    config = context.settings()
    bootstrap = context.bootstrap(config)
    names = context.topology(config).names()
    actuator = None
    if settings.actuate:
        try:
            actuator = Actuator.from_settings(settings, agent.node_name, agent.layout, key=signing_key(config),
                                              address_of=agent.pods.address_of)
        except RuntimeError as err:
            raise click.UsageError(str(err)) from None
    reporter = None
    if settings.kube_api:
        try:
            reporter = KubeReporter(KubeApi(settings.kubeconfig, None), agent.node_name)
        except (ValueError, OSError, ConfigError) as err:
            raise click.UsageError(f"--kube-api: {err}") from None
    asyncio.run(_serve(agent, bootstrap, names, actuator, reporter))


def _once(agent: NodeAgent, output: str) -> None:
    agent.collect()
    time.sleep(agent.settings.collect_interval_s)
    agent.collect()
    agent.refresh()
    objects = [agent.node(), agent.node_metric()]
    for optional in (agent.node_resource_topology(), agent.device()):
        if optional is not None:
            objects.append(optional)
    for manifest in objects:
        encode_manifest(manifest)  # exactly what would be sent: fails here if it would not encode
    emit(objects, output, single=False, columns=())


async def _serve(agent: NodeAgent, bootstrap: str, names: dict[str, str], actuator: Actuator | None,
                 reporter: KubeReporter | None) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop)
    publisher = Publisher(bootstrap, names, max_buffered_metrics=agent.settings.max_buffered_metrics)
    tasks = [publisher.run(stop), run_agent(agent, publisher, stop, reporter),
             follow_pods(agent, bootstrap, names, stop, publisher)]
    if reporter is not None:
        tasks.append(reporter.run(stop))
    if actuator is not None:
        offsets = OffsetStore(agent.settings.state_dir)
        protection = None
        if agent.settings.protection_after_s > 0 and not actuator.dry_run:
            protection = Protection(actuator, agent.settings.state_dir,
                                    stale_after_s=agent.settings.protection_after_s)
            tasks += [follow_configs(protection, bootstrap, names, stop), run_protection(protection, agent, stop)]
        tasks.append(run_actuator(actuator, publisher, bootstrap, names, stop, offsets, protection))
        if agent.settings.yarn_cgroup_dir and not actuator.dry_run:
            tasks.append(run_yarn_qos(yarn_qos(agent, protection), agent.settings.collect_interval_s, stop))
        tasks.append(run_waiting(actuator, publisher, stop, submit_ack))
    try:
        await asyncio.gather(*tasks)
    finally:
        if reporter is not None:
            await reporter.api.close()


def yarn_qos(agent: NodeAgent, protection: Protection | None) -> YarnQoS:
    """YARN containers' QoS on the config protection follows (the stored one without protection)."""
    configs = protection.configs if protection is not None else ConfigStore(agent.settings.state_dir)
    s = agent.settings
    return YarnQoS(agent.layout, s.yarn_cgroup_dir, s.resctrl_root, s.proc_root, agent.memory_policy(), configs,
                   lambda: agent.node()["metadata"].get("labels") or {})


COMMANDS = (node_agent,)
