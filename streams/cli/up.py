"""``koord up|down|status`` and the long-running processes they supervise.

``koord up`` starts, in order: the broker (unless KOORD_BROKER is set: the
embedded Tansu, or with ``--broker kafka`` a local Apache Kafka from
``streams.broker.kraft``), the topic topology, the Faust workers (one per
``--role``, ``streams.roles``; by default one running every agent), the read-model
projection and the simulator; then prints the decision stream until Ctrl-C
or SIGTERM, and stops everything in reverse order. ``--detach`` runs the
same supervisor in the background with its state in KOORD_HOME.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click

from streams import roles, stopsignals, supervision
from streams.stopsignals import stop_on_signals
from streams.broker import embedded, kraft, local
from streams.cli import context
from streams.cli.options import metrics_options
from streams.kafka import admin_client
from streams.maven import MissingPrerequisite
from streams.metrics import serve
from streams.signing import signer
from streams.topology import apply as apply_topology

EMBEDDED_WARNING = "The embedded broker (Tansu) keeps topics in memory only: `koord down` loses them."
BROKER_NAMES = {"tansu": "embedded Tansu", "kafka": "local Apache Kafka"}
READY_TIMEOUT_S = 90
STALE_YARN_STATUS_S = 60.0
"""``koord status``: a YARN bridge status older than this is flagged (the bridge writes it every round)."""
CONSUMER_SAMPLE_S = 4.0
"""``koord status``: longer than a worker's commit interval (``streams.app.COMMIT_INTERVAL_S``) and than
Faust's default one (2.8 s), so a consumer between commits is not stuck."""


@click.command()
@click.option("--detach", is_flag=True, help="Run in the background; stop with `koord down`.")
@click.option("--nodes", default=5, show_default=True, help="Simulated nodes (0: no simulator).")
@click.option("--pods-per-node", default=4, show_default=True, help="Simulated pods per node at steady state.")
@click.option("--seed", default=1, show_default=True, help="Simulator random seed.")
@click.option("--broker", "broker_kind", type=click.Choice(local.KINDS), default="tansu", show_default=True,
              help="The broker to start when KOORD_BROKER is unset: the embedded Tansu (in memory, needs only "
                   "Python) or a local Apache Kafka (KRaft; needs Java 17 and Maven, data under KOORD_HOME/kafka).")
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Also run `koord bridge` against this cluster (e.g. the one `koord kube up` started).")
@click.option("--bridge-mode", type=click.Choice(["observe", "active"]), default="active", show_default=True,
              help="With --kubeconfig: observe writes nothing (shadow mode); active binds the pods that name "
                   "koord-scheduler and publishes batch/mid allocatable.")
@click.option("--role", "role_names", type=click.Choice(list(roles.ROLES)), multiple=True, default=[roles.ALL],
              show_default=True, help="Worker roles to run, one worker each (repeatable; streams/roles.py).")
@click.option("--yarn", "yarn_rm", default=None, metavar="URL",
              help="Also run `koord yarn-bridge` against this YARN ResourceManager (e.g. the one `koord yarn up` "
                   "started).")
@click.option("--yarn-admin", default=None, metavar="HOST:PORT",
              help="With --yarn: the ResourceManager's admin address (default: the URL's host, port 8033).")
@click.option("--yarn-node", "yarn_nodes", multiple=True, metavar="NODEMANAGER=NODE",
              help="With --yarn: the Kubernetes node a NodeManager runs on (repeatable; `koord yarn-bridge --node`).")
def up(detach: bool, nodes: int, pods_per_node: int, seed: int, broker_kind: str, kubeconfig: str | None,
       bridge_mode: str, role_names: tuple[str, ...], yarn_rm: str | None, yarn_admin: str | None,
       yarn_nodes: tuple[str, ...]) -> None:
    """Start the broker (embedded by default), worker, projection and a simulated cluster."""
    config = context.settings()
    home = context.writable_home(config)
    state = context.up_state(home)
    if state and supervision.pid_alive(state["pid"]):
        raise click.ClickException(f"koordstream is already running (pid {state['pid']}); `koord down` stops it")
    if broker_kind == "kafka" and not config.broker:
        try:
            kraft.check_prerequisites()
        except MissingPrerequisite as error:
            raise click.ClickException(str(error)) from None
    bridge = (str(Path(kubeconfig).resolve()), bridge_mode) if kubeconfig else None
    role_names = tuple(dict.fromkeys(role_names))
    if (yarn_admin or yarn_nodes) and not yarn_rm:
        raise click.UsageError("--yarn-admin and --yarn-node need --yarn")
    yarn = YarnBridgeArgs(yarn_rm, yarn_admin, yarn_nodes) if yarn_rm else None
    if detach:
        _detach(home, nodes, pods_per_node, seed, broker_kind, bridge, role_names, yarn)
        return
    sys.exit(_supervise(config, nodes, pods_per_node, seed, broker_kind, bridge, role_names, yarn))


@dataclasses.dataclass(frozen=True)
class YarnBridgeArgs:
    """``koord up --yarn``: the YARN bridge child's ResourceManager and NodeManager mapping."""

    rm: str
    admin: str | None
    nodes: tuple[str, ...]

    def up_args(self) -> list[str]:
        return ["--yarn", self.rm, *(["--yarn-admin", self.admin] if self.admin else []),
                *(arg for node in self.nodes for arg in ("--yarn-node", node))]

    def bridge_args(self) -> list[str]:
        return ["--rm", self.rm, *(["--rm-admin", self.admin] if self.admin else []),
                *(arg for node in self.nodes for arg in ("--node", node))]


def _detach(home, nodes: int, pods_per_node: int, seed: int, broker_kind: str, bridge: tuple[str, str] | None,
            role_names: tuple[str, ...], yarn: YarnBridgeArgs | None) -> None:
    (home / context.STATE_FILE).unlink(missing_ok=True)
    log = open(home / "up.log", "ab")
    bridge_args = ["--kubeconfig", bridge[0], "--bridge-mode", bridge[1]] if bridge else []
    role_args = [arg for name in role_names for arg in ("--role", name)]
    proc = subprocess.Popen(
        supervision.koord_command("up", "--nodes", str(nodes), "--pods-per-node", str(pods_per_node), "--seed", str(seed),
                                  "--broker", broker_kind, *bridge_args, *role_args,
                                  *(yarn.up_args() if yarn else [])),
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        state = context.up_state(home)
        if state and state.get("ready"):
            click.echo(f"koordstream is up in the background (pid {proc.pid}), bootstrap {state['bootstrap']}")
            if state["broker_kind"] == "tansu" and state["embedded"]:
                click.echo(EMBEDDED_WARNING)
            if state.get("read_model_notice"):
                click.echo(state["read_model_notice"])
            click.echo(f"logs in {home}; `koord status`, `koord watch decisions`, `koord down`")
            return
        if proc.poll() is not None:
            raise click.ClickException(f"koord up exited with code {proc.returncode}; see {home / 'up.log'}")
        time.sleep(0.2)
    proc.terminate()
    raise click.ClickException(f"koordstream did not become ready in {READY_TIMEOUT_S}s; see {home / 'up.log'}")


def _supervise(config, nodes: int, pods_per_node: int, seed: int, broker_kind: str,
               bridge: tuple[str, str] | None, role_names: tuple[str, ...], yarn: YarnBridgeArgs | None) -> int:
    home = config.home
    stop = {"signal": signal.SIGTERM if stopsignals.received() else None}
    own_output = _tolerant_output()

    def on_signal(signum, _frame):
        stop["signal"] = signum

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    children: list[tuple[str, subprocess.Popen]] = []
    managed: list[supervision.Child] = []
    state_path = home / context.STATE_FILE
    broker = None
    logs: dict[str, object] = {}
    try:
        if config.broker:
            bootstrap, embedded_broker, broker_kind = config.broker, False, config.resolved_broker_kind
        else:
            broker = local.start(broker_kind, home / "kafka" if broker_kind == "kafka" else home)
            bootstrap, embedded_broker = broker.bootstrap, True
            children += [("broker" if len(broker.processes) == 1 else f"broker-{i + 1}", proc)
                         for i, proc in enumerate(broker.processes)]
            logs.update({name: path for (name, _), path in zip(children, broker.logs)})
        topology = context.topology(config)
        for name in role_names:
            asyncio.run(_apply_topics(bootstrap, roles.role(name).topology(topology)))
        notice = _adopt_read_model(config, bootstrap, topology, embedded_broker)
        signer(config)  # the record key, made once before any child reads it (streams.signing)
        env = {"KOORD_BROKER": bootstrap, "KOORD_BROKER_KIND": broker_kind, "KOORD_HOME": str(home.resolve()),
               "KOORD_DATABASE_URL": config.resolved_database_url}
        workers = {worker_name(name): name for name in role_names}
        metrics = {name: embedded.free_loopback_port() for name in (*workers, "projection", "simulator", "yarn-bridge")}
        managed = [supervision.Child.start(child, supervision.koord_command(
            "worker", "--role", name, "--metrics-port", str(metrics[child])), home / f"{child}.log", env)
            for child, name in workers.items()]
        managed.append(supervision.Child.start("projection", supervision.koord_command(
            "project", "--metrics-port", str(metrics["projection"])), home / "projection.log", env))
        if bridge:
            kubeconfig, mode = bridge
            managed.append(supervision.Child.start("bridge", supervision.koord_command(
                "bridge", "--kubeconfig", kubeconfig, "--mode", mode), home / "bridge.log", env))
        if yarn:
            managed.append(supervision.Child.start("yarn-bridge", supervision.koord_command(
                "yarn-bridge", *yarn.bridge_args(), "--metrics-port", str(metrics["yarn-bridge"])),
                home / "yarn-bridge.log", env))
        if nodes > 0:
            managed.append(supervision.Child.start("simulator", supervision.koord_command(
                "simulate", "--nodes", str(nodes), "--pods-per-node", str(pods_per_node), "--seed", str(seed),
                "--metrics-port", str(metrics["simulator"])), home / "simulator.log", env))
        children += [(child.name, child.proc) for child in managed]
        state = {"pid": os.getpid(), "bootstrap": bootstrap, "embedded": embedded_broker, "broker_kind": broker_kind,
                 "ready": True, "read_model_notice": notice, "roles": list(role_names),
                 "database_url": config.resolved_database_url, "home": str(home.resolve()),
                 "processes": {name: {"pid": proc.pid, "log": str(Path(logs.get(name, home / f"{name}.log")).resolve())}
                               for name, proc in children}}
        for name, port in metrics.items():
            if name in state["processes"]:
                state["processes"][name]["metrics"] = f"http://127.0.0.1:{port}/metrics"
        context.write_up_state(state_path, state)
        _banner(state)
        brokers = [(name, proc) for name, proc in children if name.startswith("broker")]
        return _run_until_stopped(bootstrap, topology, brokers, managed, stop, state, state_path, own_output)
    finally:
        supervision.stop([child.proc for child in reversed(managed)])
        if broker is not None:
            broker.stop()
        state_path.unlink(missing_ok=True)
        click.echo("koordstream stopped", err=True)


def _banner(state: dict) -> None:
    origin = BROKER_NAMES[state["broker_kind"]] if state["embedded"] else f"KOORD_BROKER, {state['broker_kind']}"
    click.echo(f"koordstream is up: bootstrap {state['bootstrap']} ({origin}), read model {state['database_url']}",
               err=True)
    if state["embedded"] and state["broker_kind"] == "tansu":
        click.echo(EMBEDDED_WARNING, err=True)
    click.echo(f"logs in {state['home']}; Ctrl-C stops everything. Decisions follow:", err=True)


def _tolerant_output() -> list[supervision.TolerantStream]:
    """Make this process's stdout and stderr drop what they cannot write (``supervision.TolerantStream``):
    the supervisor of a full KOORD_HOME must keep the broker and the children up."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    sys.stdout, sys.stderr = supervision.TolerantStream(1), supervision.TolerantStream(2)
    return [sys.stdout, sys.stderr]


def _log_failures(brokers, managed, own_output) -> dict[str, str]:
    """The processes whose log writes fail, with the error and since when."""
    failures = {"supervisor": next(filter(None, (stream.writer.failing() for stream in own_output)), None)}
    failures.update((name, proc.log.writer.failing()) for name, proc in brokers
                    if isinstance(proc, supervision.Supervised))
    failures.update((child.name, child.proc.log.writer.failing()) for child in managed)
    return {name: failure for name, failure in failures.items() if failure}


def _record(state: dict, state_path: Path) -> None:
    try:
        context.write_up_state(state_path, state)
    except OSError as error:
        click.echo(f"cannot update {state_path}: {error.strerror or error}", err=True)


def _run_until_stopped(bootstrap, topology, brokers, managed, stop, state: dict, state_path: Path,
                       own_output) -> int:
    """Print decisions until a signal; start again a child that exits (``supervision.Child``), recording
    its new pid, restarts and failure in the state file, and which logs cannot be written; stop everything
    if a broker process exits."""

    from streams.cli.get import print_decisions

    async def loop() -> int:
        stopped = asyncio.Event()
        printer = asyncio.create_task(print_decisions(bootstrap, topology, "table", False, stopped))
        try:
            while stop["signal"] is None:
                for name, proc in brokers:
                    if proc.poll() is not None:
                        click.echo(f"{name} exited with code {proc.returncode}; stopping everything", err=True)
                        return 1
                for child in managed:
                    if child.exited():
                        click.echo(child.restart_or_give_up(time.monotonic()), err=True)
                        state["processes"][child.name].update(
                            pid=child.proc.pid, restarts=state["processes"][child.name].get("restarts", 0)
                            + (child.failed is None), failed=child.failed, last_exit=child.last_exit)
                        _record(state, state_path)
                failures = _log_failures(brokers, managed, own_output)
                if failures != state.get("log_failures", {}):
                    state["log_failures"] = failures
                    _record(state, state_path)
                await asyncio.sleep(0.3)
            return 0
        finally:
            stopped.set()
            done, _ = await asyncio.wait([printer], timeout=5)
            if not done:
                printer.cancel()
                await asyncio.gather(printer, return_exceptions=True)

    return asyncio.run(loop())


def _adopt_read_model(config, bootstrap: str, topology, embedded_broker: bool) -> str | None:
    """Check the read model against this broker before the projection starts (``state.incarnation``);
    when it was of another cluster and a clean one is started, say so (on stderr, and returned for
    ``--detach`` to print)."""
    from state.db import SchemaVersionError
    from state.incarnation import adopt
    from streams.agents.projection import PROJECTED, broker_incarnation

    names = topology.names()
    current = asyncio.run(broker_incarnation(bootstrap, [names[logical] for logical in PROJECTED]))
    try:
        adoption = adopt(config.resolved_database_url, current, bootstrap)
    except SchemaVersionError as error:
        raise click.ClickException(str(error)) from None
    adoption.engine.dispose()
    if adoption.reason is None:
        return None
    kept = f"the old one is kept at {adoption.kept_at}" if adoption.kept_at else "the old one was cleared"
    if embedded_broker and adoption.replaced is not None:
        notice = f"the embedded broker of this KOORD_HOME is gone; starting a clean read model, {kept}"
    else:
        notice = adoption.describe(current, bootstrap)
    click.echo(notice, err=True)
    return notice


async def _apply_topics(bootstrap: str, topology) -> None:
    async with admin_client(bootstrap) as admin:
        await apply_topology(admin, topology)


@click.command()
def down() -> None:
    """Stop what `koord up --detach` started."""
    home = context.settings().home
    state = context.up_state(home)
    if not state or not supervision.pid_alive(state["pid"]):
        (home / context.STATE_FILE).unlink(missing_ok=True)
        raise click.ClickException("koordstream is not running")
    os.kill(state["pid"], signal.SIGTERM)
    if not supervision.wait_gone(state["pid"], 60):
        raise click.ClickException(f"pid {state['pid']} did not stop within 60s")
    click.echo("koordstream stopped")


@click.command()
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@click.option("--interval", default=CONSUMER_SAMPLE_S, show_default=True,
              help="Seconds between the two samples of the consumer groups' offsets (when records are waiting).")
def status(output: str, interval: float) -> None:
    """Report the running processes, whether the consumers keep up, and the bootstrap servers in use."""
    config = context.settings()
    state = context.up_state(config.home)
    running = bool(state and supervision.pid_alive(state["pid"]))
    bootstrap = (state or {}).get("bootstrap") or config.broker
    report = {"running": running, "bootstrap": bootstrap,
              "embedded": bool(state and state.get("embedded")),
              "broker_kind": (state or {}).get("broker_kind") or config.resolved_broker_kind,
              "database_url": (state or {}).get("database_url") or config.resolved_database_url,
              "processes": {name: {**proc, "alive": supervision.pid_alive(proc["pid"]) and not proc.get("failed")}
                            for name, proc in ((state or {}).get("processes") or {}).items()} if running else {},
              "log_failures": (state or {}).get("log_failures", {}) if running else {},
              "yarn": yarn_status(home_of(state, config)),
              "consumers": _consumers(bootstrap, context.topology(config), (state or {}).get("roles") or [roles.ALL],
                                      interval) if running or config.broker else {}}
    if output == "json":
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"koordstream: {'running' if running else 'not running'}")
    in_memory = report["embedded"] and (state or {}).get("broker_kind", "tansu") == "tansu"
    click.echo(f"bootstrap: {report['bootstrap'] or '-'}{' (embedded, in memory only)' if in_memory else ''}")
    click.echo(f"read model: {report['database_url']}")
    for name, proc in report["processes"].items():
        metrics = f"  metrics {proc['metrics']}" if proc.get("metrics") else ""
        health = "FAILED" if proc.get("failed") else "alive" if proc["alive"] else "DEAD"
        restarts = f" (restarted {proc['restarts']}x)" if proc.get("restarts") else ""
        click.echo(f"  {name:<11} pid {proc['pid']:<8} {health}{restarts}  log {proc['log']}{metrics}")
        if proc.get("failed") or proc.get("last_exit"):
            click.echo(f"    {proc.get('failed') or 'last exit: ' + proc['last_exit']}")
    for name, failure in report["log_failures"].items():
        click.echo(f"  log writes failing for {name}: {failure}; its output is dropped")
    for name, verdict in report["consumers"].items():
        click.echo(f"  consumers of {name:<11} {verdict}")
    if report["yarn"]:
        click.echo(f"YARN: {describe_yarn(report['yarn'])}")


def home_of(state: dict | None, config) -> Path:
    return Path((state or {}).get("home") or config.home)


def yarn_status(home: Path) -> dict | None:
    """The YARN bridge's last status (``streams.yarn.status``) when one ran under this home, with its age."""
    from streams.yarn.status import BRIDGE_DIR, STATUS_FILE, load

    folder = home / BRIDGE_DIR
    status = load(folder)
    if status is not None:
        try:
            status["written_s_ago"] = round(time.time() - (folder / STATUS_FILE).stat().st_mtime, 1)
        except OSError:
            return None
    return status


def describe_yarn(status: dict) -> str:
    from streams.yarn.status import describe

    stale = status.get("written_s_ago", 0) > STALE_YARN_STATUS_S
    return describe(status) + (f" (bridge not running? status written {status['written_s_ago']:.0f}s ago)"
                               if stale else "")

def _consumers(bootstrap: str | None, topology, role_names: list[str], interval: float) -> dict[str, str]:
    """Whether each worker's and the projection's consumer groups keep up (``streams.consumers``)."""
    from streams.agents.projection import GROUP_ID
    from streams.consumers import progress

    groups = {**{worker_name(name): roles.role(name).app_id(topology) for name in role_names}, "projection": GROUP_ID}
    try:
        found = asyncio.run(asyncio.wait_for(progress(bootstrap, list(groups.values()), topology, interval), interval + 20))
    except Exception as error:
        return {name: f"unknown: the broker did not answer ({type(error).__name__})" for name in groups}
    return {name: verdict.describe() for name, verdict in zip(groups, found)}


def worker_name(role_name: str) -> str:
    """The name ``koord up`` and ``koord status`` give the worker of a role."""
    return "worker" if role_name == roles.ALL else f"worker-{role_name}"


@click.command()
@click.option("-l", "--loglevel", default="info", show_default=True)
@click.option("--role", "role_name", type=click.Choice(list(roles.ROLES)), default=roles.ALL, show_default=True,
              help="The agents to run (streams/roles.py): all of them, or one; its consumer group, changelogs and "
                   "transactional ids are named after it.")
@metrics_options
def worker(loglevel: str, role_name: str, metrics_port: int | None, metrics_host: str) -> None:
    """Run a Faust worker (routers and aggregates, or the role's) against KOORD_BROKER."""
    from streams.app import create_app, run_worker

    serve(metrics_port, metrics_host)
    config = context.settings()
    app = create_app(context.bootstrap(config), context.topology(config), role=roles.role(role_name))
    run_worker(app, loglevel)


@click.command()
@metrics_options
def project(metrics_port: int | None, metrics_host: str) -> None:
    """Run the read-model projection (output and object topics into SQL)."""
    from streams.agents.projection import run_projection

    serve(metrics_port, metrics_host)
    config = context.settings()

    async def main() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        await run_projection(context.bootstrap(config), context.topology(config), config.resolved_database_url, stop)

    asyncio.run(main())


COMMANDS = (up, down, status, worker, project)
