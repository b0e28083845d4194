"""``koord bench``: benchmarks through the real broker; they print their figures."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Callable, Iterator

import click

from streams.bench import harness
from streams.scheduler import perfworkloads
from streams.broker import kraft, local
from streams.cli import context
from streams.maven import MissingPrerequisite

by_role_option = click.option(
    "--by-role", is_flag=True,
    help="One worker per role (router, domains, scheduling, node, ticks; streams/roles.py) instead of one running "
         "them all: the worker CPU per event is also printed per role, what each role alone needs of a core.")

broker_option = click.option(
    "--broker", "broker_kind", type=click.Choice(local.KINDS), default="tansu", show_default=True,
    help="The broker to start for the run: the embedded Tansu or a local Apache Kafka (KRaft; Java 17 and "
         "Maven). With KOORD_BROKER set, that broker is used instead (its kind from KOORD_BROKER_KIND).")


@contextlib.contextmanager
def _harness(broker_kind: str, output: str, workers: int = 1, by_role: bool = False) -> Iterator[harness.Harness]:
    config = context.settings()
    if broker_kind == "kafka" and not config.broker:
        try:
            kraft.check_prerequisites()
        except MissingPrerequisite as error:
            raise click.ClickException(str(error)) from None
    if config.broker and output != "json":
        click.echo(f"KOORD_BROKER is set: running on {config.broker} ({config.resolved_broker_kind}), "
                   f"not on a fresh {broker_kind} broker", err=True)
    with harness.running(broker_kind, config, workers, by_role) as running:
        try:
            yield running
        except TimeoutError as error:
            raise click.ClickException(f"on {running.describe()}: {error}") from None


def _broker(running: harness.Harness) -> dict:
    return {"kind": running.broker_kind, "origin": running.broker_origin, "bootstrap": running.bootstrap}


def _each_size(sizes: tuple[int, ...], broker_kind: str, output: str,
               measure: Callable[[harness.Harness, int], dict], workers: int = 1, by_role: bool = False
               ) -> Iterator[tuple[dict, harness.Harness]]:
    """``measure(running, size)`` once per size, each on a fresh broker (KOORD_BROKER's when set) with
    ``workers`` workers (or one per role), yielded as each run ends: its result with its broker, and the harness
    it ran on."""
    for size in sizes:
        with _harness(broker_kind, output, workers, by_role) as running:
            result = {"broker": _broker(running), **measure(running, size)}
        yield result, running


@click.group()
def bench() -> None:
    """Measure koordstream through a real broker (a fresh one of --broker's kind unless KOORD_BROKER is set)."""


WORKLOADS = ("plain", "gang", "reservations", *perfworkloads.WORKLOADS)


@bench.command("scheduler")
@click.option("--nodes", default=5000, show_default=True)
@click.option("--pods", "sizes", type=int, multiple=True, default=(5000,), show_default=True,
              help="Pod count of a run; repeat for several runs (e.g. 5000, 20000, 50000), each on a fresh broker, "
                   "in one table.")
@click.option("--rate", type=float, default=None, help="Offered pods/s (default: as fast as possible).")
@click.option("--seed", default=1, show_default=True)
@click.option("--workload", "workloads", type=click.Choice(WORKLOADS), multiple=True, default=("plain",),
              show_default=True,
              help="plain pods; one gang of all the pods; one reservation per pod, placed first; or one of "
                   "kube-scheduler's scheduler_perf workloads, with its own nodes and pods (repeatable: one run each).")
@click.option("--case", default=None,
              help="With a scheduler_perf workload: its case (5Nodes, 500Nodes, or the performance case, the default).")
@click.option("--domains", "domain_counts", type=int, multiple=True, default=(1,), show_default=True,
              help="Scheduling domains of a run: 1 is the default domain with four quotas; more are that many "
                   "ElasticQuotaProfiles sharing the nodes, each its own domain. Repeat for several runs (1, 2, 4).")
@click.option("--workers", type=int, default=None,
              help="Workers of a run, one consumer group (default: one per domain, at most one per CPU).")
@click.option("--in-process", "core_only", is_flag=True,
              help="Only the pure core in this process, no broker: pods/s per slice of 5,000 pods and µs/pod per plugin "
                   "and extension point (plain workload, or a scheduler_perf workload's measured pods).")
@click.option("--profile-from", type=int, default=None,
              help="With --in-process: cProfile the pods from this index on (a scheduler_perf workload's measured "
                   "pods) and print the top lines.")
@by_role_option
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@broker_option
def scheduler_cmd(nodes: int, sizes: tuple[int, ...], rate: float | None, seed: int, workloads: tuple[str, ...],
                  case: str | None, domain_counts: tuple[int, ...], workers: int | None, core_only: bool,
                  profile_from: int | None, by_role: bool, output: str, broker_kind: str) -> None:
    """Pods/s and p50/p99 submit-to-decision latency, plus the core's in-process pods/s, one row per pod count
    and domain count (with --in-process: only the core, per slice of pods of the largest count)."""
    from streams.bench import scheduler

    perf = [w for w in workloads if w in perfworkloads.WORKLOADS]
    if perf:
        if len(perf) != len(workloads):
            raise click.ClickException("run scheduler_perf workloads apart from plain, gang and reservations")
        if core_only:
            _perf_in_process(perf, case, profile_from, output)
            return
        _perf_runs(perf, case, rate, workers or 1, output, broker_kind)
        return
    if len(workloads) > 1:
        raise click.ClickException("--workload plain, gang or reservations: one at a time")
    workload = workloads[0]
    if core_only:
        core = scheduler.core_only(nodes, max(sizes), seed, profile_from)
        click.echo(json.dumps(core) if output == "json" else "\n".join(scheduler.core_lines(core)))
        return
    runs = []
    for domains in domain_counts:
        count = workers or max(1, min(domains, os.cpu_count() or 1))
        if by_role and (workers or domains > 1):
            raise click.ClickException("--by-role runs one worker per role: leave out --workers and --domains")
        for run, running in _each_size(sizes, broker_kind, output, lambda running, pods, domains=domains: scheduler.run(
                running, nodes, pods, rate, seed, workload, domains), count, by_role):
            runs.append(run)
            if output != "json":
                click.echo(f"broker: {running.describe()}", err=True)
    if output == "json":
        click.echo(json.dumps(runs[0] if len(runs) == 1 else {"runs": runs}))
        return
    click.echo(f"end to end, {nodes} nodes, {'offered ' + str(rate) + '/s' if rate else 'saturated'}, "
               f"workload {workload}:")
    click.echo(f"{'pods':>6} {'domains':>7} {'workers':>7} {'decided':>7} {'pods/s':>7} {'p50 ms':>8} {'p99 ms':>8} "
               f"{'sent p50':>8} {'sent p99':>8} {'worker CPU µs/pod':>17} {'in process pods/s':>17}")
    for run in runs:
        e2e, core = run["end_to_end"], run["in_process"]
        stage = e2e["submit_to_decision_sent"] or {"p50_ms": "-", "p99_ms": "-"}
        click.echo(f"{e2e['pods']:>6} {e2e['domains']:>7} {e2e['workers'] or '-':>7} {e2e['decided']:>7} "
                   f"{e2e['pods_per_s']:>7} {e2e['p50_ms']:>8} {e2e['p99_ms']:>8} {stage['p50_ms']:>8} {stage['p99_ms']:>8} "
                   f"{e2e['worker_cpu_us_per_pod'] or '-':>17} {core['pods_per_s']:>17.1f}")
        if e2e["worker_cpu_us_per_pod_by_role"]:
            click.echo("  worker CPU µs/pod by role: " + _by_role(e2e["worker_cpu_us_per_pod_by_role"]))
        if "on_their_reservation" in e2e:
            click.echo(f"  owners placed on their reservation: {e2e['on_their_reservation']}/{e2e['pods']}")
    click.echo("sent: submit -> decision sent by the worker")


def _perf_in_process(workloads: list[str], case: str | None, profile_from: int | None, output: str) -> None:
    """Each scheduler_perf workload's pure core in this process (``streams.scheduler.bench.run_workload``)."""
    from streams.bench import scheduler
    from streams.scheduler import bench as core

    for name in workloads:
        try:
            perfworkloads.WORKLOADS[name].case(case)
        except ValueError as error:
            raise click.ClickException(str(error)) from None
    runs = [core.run_workload(name, case, profile_from=profile_from) for name in workloads]
    if output == "json":
        click.echo(json.dumps({"runs": runs}))
        return
    for run in runs:
        click.echo(f"{run['workload']} {run['case']}: {run['init_pods']} init pods ({run['init_scheduled']} scheduled) "
                   "untimed, then")
        click.echo("\n".join(scheduler.core_lines(run)))


def _perf_runs(workloads: list[str], case: str | None, rate: float | None, workers: int, output: str,
               broker_kind: str) -> None:
    """One fresh broker per scheduler_perf workload; a row each, kube-scheduler's floor beside it."""
    from streams.bench import scheduler

    for name in workloads:
        try:
            perfworkloads.WORKLOADS[name].case(case)
        except ValueError as error:
            raise click.ClickException(str(error)) from None
    runs = []
    for name in workloads:
        with _harness(broker_kind, output, workers) as running:
            runs.append({"broker": _broker(running), **scheduler.run_perf(running, name, case, rate)})
        if output != "json":
            click.echo(f"{name} done on {running.describe()}", err=True)
    if output == "json":
        click.echo(json.dumps({"runs": runs}))
        return
    click.echo(f"scheduler_perf workloads end to end, {'offered ' + str(rate) + '/s' if rate else 'saturated'}, "
               f"{workers} worker(s), broker {runs[0]['broker']['kind']}; floor: kube-scheduler's CI threshold")
    click.echo(f"{'workload':<36} {'case':<20} {'init':>6} {'pods':>6} {'scheduled':>9} {'pods/s':>7} {'floor':>6} "
               f"{'ratio':>6} {'p99 ms':>8} {'worker CPU µs/pod':>17}")
    for run in runs:
        ratio = f"{run['pods_per_s'] / run['floor_pods_per_s']:.2f}" if run["floor_pods_per_s"] else "-"
        click.echo(f"{run['workload']:<36} {run['case']:<20} {run['init_pods']:>6} {run['pods']:>6} "
                   f"{run['scheduled']:>9} {run['pods_per_s']:>7} {run['floor_pods_per_s'] or '-':>6} {ratio:>6} "
                   f"{run['p99_ms']:>8} {run['worker_cpu_us_per_pod'] or '-':>17}")


@bench.command("trace")
@click.option("--nodes", "nodes_csv", required=True, type=click.Path(dir_okay=False),
              help="The trace's node list (sn,cpu_milli,memory_mib,gpu,model), e.g. openb_node_list_gpu_node.csv.")
@click.option("--pods", "pods_csv", required=True, type=click.Path(dir_okay=False),
              help="The trace's pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli,...,qos,...).")
@click.option("--policy", type=click.Choice(("default", "fragmentation")), default="default", show_default=True,
              help="Koordinator's default device scoring, or with the GPUFragmentation score added.")
@click.option("--seeds", default=10, show_default=True, help="Arrival orders (seeds 42, 43, ...); medians are reported.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@broker_option
def trace_cmd(nodes_csv: str, pods_csv: str, policy: str, seeds: int, output: str, broker_kind: str) -> None:
    """Unallocated GPU and fragmentation at 100 % arrived on a GPU cluster trace, replayed as the FGD paper does
    (Alibaba's cluster-trace-gpu-v2023 is public: github.com/alibaba/clusterdata, cluster-trace-gpu-v2023)."""
    from pathlib import Path

    from streams.bench import gputrace, trace

    try:
        nodes, pods = gputrace.read_nodes(Path(nodes_csv)), gputrace.read_pods(Path(pods_csv))
    except gputrace.TraceError as error:
        raise click.ClickException(str(error)) from None
    if seeds < 1:
        raise click.ClickException("--seeds must be at least 1")
    runs = []
    for seed in range(trace.FIRST_SEED, trace.FIRST_SEED + seeds):
        with _harness(broker_kind, output) as running:
            runs.append(trace.run_seed(running, nodes, pods, policy, seed))
        if output != "json":
            click.echo(f"seed {seed} done: {runs[-1]['unallocated_gpu_pct']} % GPU unallocated", err=True)
    result = {"broker": _broker(running), **trace.summary(nodes, pods, policy, runs)}
    if output == "json":
        click.echo(json.dumps(result))
        return
    click.echo(f"broker: {running.describe()}")
    click.echo(f"trace: {result['nodes']} GPU nodes, {result['gpus']} GPUs, {result['trace_pods']} pods; "
               f"policy {policy}; {seeds} seed(s)")
    click.echo(f"{'seed':>6} {'unallocated GPU %':>18} {'fragmentation %':>16} {'failed':>7} {'pods/s':>8} "
               f"{'p99 ms':>8}")
    for row in result["seeds"]:
        click.echo(f"{row['seed']:>6} {row['unallocated_gpu_pct']:>18} {row['fragmentation_pct']:>16} "
                   f"{row['failed_pods']:>7} {row['pods_per_s']:>8} {row['p99_ms']:>8}")
    median = result["median"]
    click.echo(f"{'median':>6} {median['unallocated_gpu_pct']:>18} {median['fragmentation_pct']:>16} "
               f"{median['failed_pods']:>7} {median['pods_per_s']:>8} {median['p99_ms']:>8}")
    click.echo("paper (unallocated GPU % at 100 % arrived, medians of 10 seeds): " +
               ", ".join(f"{name} {value}" for name, value in result["paper_baselines_unallocated_gpu_pct"].items()))


@bench.command("nodes")
@click.option("--nodes", "sizes", type=int, multiple=True, default=(1000, 5000, 10000), show_default=True,
              help="Node count of a run; repeat for several runs, each on a fresh broker, in one table.")
@click.option("--pods", default=20, show_default=True, help="Pods per node.")
@click.option("--rounds", default=3, show_default=True, help="NodeMetrics per node, one minute of event time apart.")
@click.option("--seed", default=1, show_default=True)
@click.option("--timeout", type=float, default=3600.0, show_default=True,
              help="Seconds a run (one node count, setup to restart) may take; past them the bench fails, naming "
                   "what it was waiting for (10,000 nodes x 20 pods took 13 minutes on Tansu).")
@by_role_option
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@broker_option
def nodes_cmd(sizes: tuple[int, ...], pods: int, rounds: int, seed: int, timeout: float, by_role: bool, output: str,
              broker_kind: str) -> None:
    """NodeMetric events/s into profiles, batch/mid and the QoS plan on one worker (and on through the scheduling
    domain's NodeUsages), bytes of state per node and a restarted worker's seconds to serve, one row per node count."""
    from streams.bench import nodes as node_bench

    runs = []
    if output != "json":
        click.echo(f"{'nodes':>6} {'pods/node':>9} {'NodeMetrics':>11} {'B/event':>7} {'events/s':>9} {'seconds':>8} "
                   f"{'+ scheduler/s':>13} {'worker CPU µs/event':>19} {'produced s':>10} {'state B/node':>12} "
                   f"{'restart s':>9} {'setup s':>8}  broker")
    for run, running in _each_size(sizes, broker_kind, output,
                                   lambda running, nodes: node_bench.run(running, nodes, pods, rounds, seed, timeout),
                                   by_role=by_role):
        runs.append(run)
        if output != "json":
            click.echo(f"{run['nodes']:>6} {run['pods_per_node']:>9} {run['events']:>11} {run['event_bytes']:>7} "
                       f"{run['events_per_s']:>9} {run['seconds']:>8} {run['through_scheduler_per_s']:>13} "
                       f"{run['worker_cpu_us_per_event'] or '-':>19} {run['produce_seconds']:>10} "
                       f"{run['state_bytes_per_node']:>12} {run['restart_seconds']:>9} {run['setup_seconds']:>8}  "
                       f"{running.describe()}")
            if run["worker_cpu_us_per_event_by_role"]:
                click.echo("  worker CPU µs/event by role: " + _by_role(run["worker_cpu_us_per_event_by_role"]))
    if output == "json":
        click.echo(json.dumps({"runs": runs}))


def _by_role(figures: dict[str, float]) -> str:
    return ", ".join(f"{role} {value}" for role, value in figures.items())


@bench.command("actuation")
@click.option("--events", default=200, show_default=True, help="NodeMetrics to produce (each changes the BE quota).")
@click.option("--rate", type=float, default=20.0, show_default=True, help="NodeMetrics per second.")
@click.option("--cgroups", type=click.Choice(["auto", "real", "fake"]), default="auto", show_default=True,
              help="Write a real cgroup v1 test tree (root) or a fake one; auto: real when root.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@broker_option
def actuation_cmd(events: int, rate: float, cgroups: str, output: str, broker_kind: str) -> None:
    """p50/p99 latency from a NodeMetric produced to the BE cgroup quota written by a node agent's actuator."""
    from streams.bench import actuation

    with _harness(broker_kind, output) as running:
        result = {"broker": _broker(running), **actuation.run(running, events, rate, cgroups)}
    if output == "json":
        click.echo(json.dumps(result))
        return
    click.echo(f"broker: {running.describe()}")
    stages = result["stages"]
    click.echo(f"NodeMetric -> cgroup write ({result['written']}/{result['events']} events at {result['rate_per_s']}/s, "
               f"{result['cgroup']}): p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms")
    for name, figures in stages.items():
        click.echo(f"  {name}: p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, max {figures['max_ms']} ms")


@bench.command("idle")
@click.option("--seconds", type=float, default=30.0, show_default=True, help="Length of the measured window.")
@click.option("--settle", type=float, default=None,
              help="Seconds of idling before it (default: 20 on Tansu, 180 on Kafka, whose JVM compiles for minutes).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@broker_option
def idle_cmd(seconds: float, settle: float | None, output: str, broker_kind: str) -> None:
    """CPU of an idle `koord up --nodes 0` on a fresh broker, per process and in total (% of one core)."""
    from streams.bench import idle

    if broker_kind == "kafka":
        try:
            kraft.check_prerequisites()
        except MissingPrerequisite as error:
            raise click.ClickException(str(error)) from None
    result = idle.run(broker_kind, idle.SETTLE_S[broker_kind] if settle is None else settle, seconds)
    if output == "json":
        click.echo(json.dumps(result))
        return
    click.echo(f"broker: fresh {broker_kind} broker (koord up --nodes 0; {result['settle_s']:g} s settling, "
               f"{seconds:g} s measured, "
               f"load average {result['loadavg_1m'][0]} -> {result['loadavg_1m'][1]})")
    for name, share in result["cpu_percent"].items():
        click.echo(f"  {name:<11} {share:6.2f} % of one core")


@bench.command("hostile")
@click.option("--records", default=10000, show_default=True, help="Hostile records, across every topic.")
@click.option("--pods", default=200, show_default=True, help="Valid pods applied after them.")
@click.option("--seed", default=1, show_default=True)
@click.option("--oversized", default=3, show_default=True,
              help="Most records of about a megabyte among them (just over the record limit, or valid just under it).")
@click.option("--timeout", type=float, default=300.0, show_default=True,
              help="Seconds to wait for the valid pods' decisions.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@click.option("--broker", "broker_kind", type=click.Choice(local.KINDS), default="tansu", show_default=True,
              help="The broker to start for the run: the embedded Tansu or a local Apache Kafka (KRaft; Java 17 "
                   "and Maven).")
def hostile_cmd(records: int, pods: int, seed: int, oversized: int, timeout: float, output: str,
                broker_kind: str) -> None:
    """Hostile records of every failure class on every topic, then valid pods: how many are decided, dead
    letters, and whether every process of the pipeline survived. Always on a fresh `koord up --nodes 0`
    (KOORD_BROKER is ignored: hostile records never go to a broker others use)."""
    from streams.bench import hostile

    if broker_kind == "kafka":
        try:
            kraft.check_prerequisites()
        except MissingPrerequisite as error:
            raise click.ClickException(str(error)) from None
    result = hostile.run(broker_kind, records, pods, seed, timeout, oversized)
    if output == "json":
        click.echo(json.dumps(result))
        return
    click.echo(f"broker: fresh {broker_kind} broker (koord up --nodes 0), seed {seed}")
    click.echo(f"time: {result['seconds']} s (hostile records produced in {result['hostile_produce_seconds']} s)")
    click.echo(f"records sent: {result['records_sent']} "
               f"({result['records_refused_by_producer_or_broker']} refused by the producer or the broker)")
    for reason, count in result["refusals"].items():
        click.echo(f"  refused {count}x: {reason}")
    click.echo(f"dead letters: {result['dead_letters']} ({result['dead_letters_of_hostile_records']} for hostile "
               f"records; {result['dead_letters_missing']} records whose class calls for one have none)")
    click.echo(f"pods decided: {result['pods_decided']}/{result['pods']} "
               f"({result['pods_decided_more_than_once']} decided more than once)")
    click.echo(f"lost {result['lost']}, stopped {result['stopped']}, wrong {result['wrong']} (target: 0, 0, 0)")
    if result["lost_pods"]:
        click.echo(f"  lost: {', '.join(result['lost_pods'])}")
    if result["stopped_processes"]:
        click.echo(f"  stopped: {', '.join(result['stopped_processes'])}")
    if not result["read_model_read"]:
        click.echo("  koord get failed: every forged and replayed decision counts as wrong")
    dead = [name for name, up in result["processes_alive"].items() if not up]
    click.echo(f"processes alive: {'all' if not dead else 'NO, dead: ' + ', '.join(dead)} "
               f"({', '.join(result['processes_alive'])})")
    for kind, figures in sorted(result["by_class"].items()):
        click.echo(f"  {kind:<30} sent {figures['sent']:>6}  refused {figures['refused']:>4}  "
                   f"dead-lettered {figures['dead_lettered']:>6}  missing {figures['dead_letters_missing']:>4}  "
                   f"wrong {figures['wrong']:>4}")


@bench.command("bridge")
@click.option("--nodes", default=1000, show_default=True, help="Nodes created through the API server.")
@click.option("--pods", default=2000, show_default=True, help="Pods naming koord-scheduler created after them.")
@click.option("--rate", type=float, default=None, help="Offered pod creates/s (default: as fast as possible).")
@click.option("--versus", type=click.Choice(("kube-scheduler",)), default=None,
              help="Race kube-scheduler (built with the control plane, same version): per client rate, kube-scheduler "
                   "then koordstream, each on a fresh control plane with the same nodes and pods.")
@click.option("--client-rate", "client_rates", multiple=True, metavar="QPS/BURST|unthrottled",
              help="Client QPS/burst against the API server of the bridge (and of kube-scheduler with --versus). "
                   "Repeat for several races. Default: the bridge's own; with --versus, 50/100 (kube-scheduler's "
                   "default) and unthrottled.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@broker_option
def bridge_cmd(nodes: int, pods: int, rate: float | None, versus: str | None, client_rates: tuple[str, ...],
               output: str, broker_kind: str) -> None:
    """Pod created -> bound through a local kube-apiserver and `koord bridge --mode active` (pods/s, p50/p99),
    and the bridge's memory per watched object and CPU per 1,000 object changes. Needs Go (the control plane)."""
    from streams.bench import bridge, clientrate
    from streams.kube import controlplane

    try:
        clients = tuple(clientrate.parse(text) for text in client_rates)
        controlplane.binaries()
    except (ValueError, controlplane.MissingPrerequisite) as error:
        raise click.ClickException(str(error)) from None
    if versus:
        _versus(nodes, pods, rate, clients or (clientrate.KUBE_SCHEDULER_DEFAULT, clientrate.UNTHROTTLED), output,
                broker_kind)
        return
    if len(clients) > 1:
        raise click.ClickException("--client-rate: one value without --versus")
    with _harness(broker_kind, output) as running:
        result = {"broker": _broker(running),
                  **bridge.run(running, nodes, pods, rate, client=clients[0] if clients else None)}
    if output == "json":
        click.echo(json.dumps(result))
        return
    load = result["loadavg"]
    click.echo(f"broker: {running.describe()}; {result['cpus']} cpus, load average {load['before'][0]} -> "
               f"{load['after'][0]}")
    click.echo(f"pod created -> bound ({nodes} nodes, {result['bound']}/{pods} pods bound, "
               f"{'offered ' + str(rate) + '/s' if rate else 'saturated'}): {result['pods_per_s']} pods/s, "
               f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms")
    for stage in ("create_to_decision", "decision_to_bound"):
        if figures := result[stage]:
            click.echo(f"  {stage.replace('_', ' ')}: p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms")
    _echo_unbound(result)
    cost = result["bridge"]
    click.echo(f"bridge: RSS {cost['baseline_rss_mib']} -> {cost['rss_mib']} MiB, {cost['rss_bytes_per_object']} B "
               f"per watched object ({cost['objects']} objects); {cost['cpu_seconds_per_1000_changes']} CPU s per "
               f"1,000 object changes ({cost['object_changes']} changes, active mode); "
               f"{'alive' if cost['alive'] else 'EXITED'}, {cost['tracebacks']} tracebacks; client rate "
               f"{cost['client']}")


def _echo_unbound(result: dict) -> None:
    if unbound := result["unbound"]:
        click.echo(f"  UNBOUND {unbound['count']} (e.g. {', '.join(unbound['first'])}), by last decision read: "
                   f"{unbound['last_decision']}")


def _versus(nodes: int, pods: int, rate: float | None, clients: tuple, output: str, broker_kind: str) -> None:
    """``koord bench bridge --versus kube-scheduler``: one race per client rate, a table row per side."""
    from streams.bench import bridge, versus

    def koordstream(client) -> dict:
        with _harness(broker_kind, output) as running:
            return {"broker": _broker(running), **bridge.run(running, nodes, pods, rate, client=client)}

    if output != "json":
        click.echo(f"{nodes} nodes, {pods} pods, {'offered ' + str(rate) + '/s' if rate else 'saturated'}; "
                   f"{os.cpu_count()} cpus; each side on a fresh control plane, kube-scheduler first")
        click.echo(f"{'client rate':<20} {'scheduler':<15} {'bound':>11} {'listed':>6} {'pods/s':>7} {'p50 ms':>8} "
                   f"{'p99 ms':>8} {'max ms':>8} {'CPU s':>6} {'load':>10}")
    races = []
    try:
        for race in versus.races(nodes, pods, rate, clients, koordstream):
            races.append(race)
            if output != "json":
                _print_race(race, pods)
    except TimeoutError as error:
        raise click.ClickException(f"kube-scheduler's run: {error}") from None
    if output == "json":
        click.echo(json.dumps({"versus": "kube-scheduler", "nodes": nodes, "pods": pods, "races": races}))
    else:
        click.echo("bound: seen bound by the bench's watch (the figures are theirs); listed: bound as the API server "
                   "lists them at the end. CPU s: kube-scheduler's, or the bridge's (not the worker's), from the first "
                   "pod create to the end")


def _print_race(race: dict, pods: int) -> None:
    """Two rows of a race (kube-scheduler's, koordstream's) and their ratio."""
    for name, side, cpu in (("kube-scheduler", race["kube_scheduler"], race["kube_scheduler"]["kube_scheduler"]),
                            ("koordstream", race["koordstream"], race["koordstream"]["bridge"])):
        load = side["loadavg"]
        click.echo(f"{race['client'] if name == 'kube-scheduler' else '':<20} {name:<15} "
                   f"{str(side['bound']) + '/' + str(pods):>11} {side['bound_listed']:>6} {side['pods_per_s']:>7} "
                   f"{side['p50_ms']:>8} "
                   f"{side['p99_ms']:>8} {side['max_ms']:>8} {cpu['cpu_seconds']:>6} "
                   f"{load['before'][0]:>4}->{load['after'][0]:<4}")
    _echo_unbound(race["koordstream"])
    click.echo(f"{'':<20} koordstream / kube-scheduler: {race['ratio']}x pods/s, {race['p99_ratio']}x p99; "
               f"bridge client rate: {race['koordstream']['bridge']['client']}")


COMMANDS = (bench,)
