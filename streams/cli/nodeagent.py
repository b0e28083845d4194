"""``koord node-agent``: collect this host's node, pod and device metrics and publish them (``node_agent``).

Flags mirror ``node_agent.settings.AgentSettings`` (defaults come from there).
``--once`` samples for one collect interval and prints the Node, NodeMetric,
NodeResourceTopology and Device objects it would send, without a broker.

Unless ``--no-actuate``, the agent also applies the actuations addressed to
this node (``node_agent.actuator``) and publishes their acknowledgements;
``KOORD_ACTUATION_KEY`` set means unsigned or badly signed actuations are
refused. ``--dry-run`` prints, one JSON line per actuation, what would be
written, and writes, persists and acknowledges nothing. With actuation on and
``--protection-after`` above 0, the agent also keeps the last slo-controller-config
and protects the node itself when the stream is silent or unreachable
(``node_agent/actuator/protection.py``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from pathlib import Path

import click

from node_agent.actuator.actuator import Actuator, OffsetStore, run_actuator
from node_agent.actuator.protection import Protection, follow_configs, run_protection
from node_agent.agent import NodeAgent
from node_agent.collectors.hostapps import HostApplicationError
from node_agent.publisher import Publisher, encode_manifest
from node_agent.run import follow_pods, run_agent
from node_agent.settings import CGROUP_DRIVERS, CGROUP_VERSIONS, MEMORY_POLICIES, AgentSettings, SettingsError
from streams.actuation import signing_key
from streams.cli import context
from streams.cli.options import metrics_options
from streams.metrics import serve
from streams.cli.output import emit

D = AgentSettings()


@click.command("node-agent")
@click.option("--node-name", default="", help="Node name (default: the host name).")
@click.option("--once", is_flag=True, help="Sample once, print the objects it would send, exit (no broker).")
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), default="json", show_default=True,
              help="Format of --once.")
@click.option("--collect-interval", type=float, default=D.collect_interval_s, show_default=True, help="Seconds.")
@click.option("--report-interval", type=float, default=D.report_interval_s, show_default=True, help="Seconds.")
@click.option("--aggregate-duration", type=float, default=D.aggregate_duration_s, show_default=True,
              help="Seconds averaged into nodeUsage, systemUsage and podsMetric.")
@click.option("--memory-policy", type=click.Choice(MEMORY_POLICIES), default=D.memory_policy, show_default=True)
@click.option("--cgroup-root", type=click.Path(path_type=Path), default=D.cgroup_root, show_default=True)
@click.option("--kubepods-dir", default=D.kubepods_dir, show_default=True)
@click.option("--cgroup-driver", type=click.Choice(CGROUP_DRIVERS), default=D.cgroup_driver, show_default=True)
@click.option("--cgroup-version", type=click.Choice(CGROUP_VERSIONS), default=D.cgroup_version, show_default=True)
@click.option("--proc-root", type=click.Path(path_type=Path), default=D.proc_root, show_default=True)
@click.option("--sys-root", type=click.Path(path_type=Path), default=D.sys_root, show_default=True)
@click.option("--host-applications", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="YAML/JSON list of host applications (NodeSLO spec.hostApplications).")
@click.option("--max-buffered-metrics", type=int, default=D.max_buffered_metrics, show_default=True,
              help="NodeMetric records kept during a broker outage (oldest dropped first).")
@click.option("--actuate/--no-actuate", default=D.actuate, show_default=True,
              help="Apply the actuations addressed to this node (cgroups, resctrl, tc) and acknowledge them.")
@click.option("--dry-run", is_flag=True, default=D.actuation_dry_run,
              help="Print what each actuation would write; write, persist and acknowledge nothing.")
@click.option("--resctrl-root", type=click.Path(path_type=Path), default=D.resctrl_root, show_default=True)
@click.option("--tc-interface", default=D.tc_interface,
              help="Interface whose egress gets the HTB classes L0/L1/L2 (default: none, tc actuations unsupported).")
@click.option("--state-dir", type=click.Path(path_type=Path, file_okay=False), default=D.state_dir,
              show_default=True, help="Where the last applied actuation sequences and the read offset are kept.")
@click.option("--protection-after", type=float, default=D.protection_after_s, show_default=True,
              help="Seconds without actuations or config (or at once with the broker unreachable) before the agent "
                   "runs CPU suppress and memory-eviction reports itself on the last config; 0: never.")
@metrics_options
def node_agent(node_name: str, once: bool, output: str, collect_interval: float, report_interval: float,
               aggregate_duration: float, memory_policy: str, cgroup_root: Path, kubepods_dir: str,
               cgroup_driver: str, cgroup_version: str, proc_root: Path, sys_root: Path,
               host_applications: Path | None, max_buffered_metrics: int, actuate: bool, dry_run: bool,
               resctrl_root: Path, tc_interface: str, state_dir: Path, protection_after: float, metrics_port: int,
               metrics_host: str) -> None:
    """Collect this host's node, pod and device usage; publish Node, NodeMetric and Device objects."""
    settings = AgentSettings(
        node_name=node_name, collect_interval_s=collect_interval, report_interval_s=report_interval,
        aggregate_duration_s=aggregate_duration, memory_policy=memory_policy, cgroup_root=cgroup_root,
        kubepods_dir=kubepods_dir, cgroup_driver=cgroup_driver, cgroup_version=cgroup_version,
        proc_root=proc_root, sys_root=sys_root, host_applications_file=host_applications,
        max_buffered_metrics=max_buffered_metrics, actuate=actuate, actuation_dry_run=dry_run,
        resctrl_root=resctrl_root, tc_interface=tc_interface, state_dir=state_dir,
        protection_after_s=protection_after)
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
            actuator = Actuator.from_settings(settings, agent.node_name, agent.layout, key=signing_key())
        except RuntimeError as err:
            raise click.UsageError(str(err)) from None
    asyncio.run(_serve(agent, bootstrap, names, actuator))


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


async def _serve(agent: NodeAgent, bootstrap: str, names: dict[str, str], actuator: Actuator | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    publisher = Publisher(bootstrap, names, max_buffered_metrics=agent.settings.max_buffered_metrics)
    tasks = [publisher.run(stop), run_agent(agent, publisher, stop), follow_pods(agent, bootstrap, names, stop)]
    if actuator is not None:
        offsets = OffsetStore(agent.settings.state_dir)
        protection = None
        if agent.settings.protection_after_s > 0 and not actuator.dry_run:
            protection = Protection(actuator, agent.settings.state_dir,
                                    stale_after_s=agent.settings.protection_after_s)
            tasks += [follow_configs(protection, bootstrap, names, stop), run_protection(protection, agent, stop)]
        tasks.append(run_actuator(actuator, publisher, bootstrap, names, stop, offsets, protection))
    await asyncio.gather(*tasks)


COMMANDS = (node_agent,)
