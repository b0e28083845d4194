"""``koord bench``: benchmarks through the real broker; they print their figures."""

from __future__ import annotations

import json

import click

from streams.bench import harness
from streams.cli import context


@click.group()
def bench() -> None:
    """Measure koordstream through a real broker (a fresh embedded one unless KOORD_BROKER is set)."""


@bench.command("scheduler")
@click.option("--nodes", default=5000, show_default=True)
@click.option("--pods", default=5000, show_default=True)
@click.option("--rate", type=float, default=None, help="Offered pods/s (default: as fast as possible).")
@click.option("--seed", default=1, show_default=True)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def scheduler_cmd(nodes: int, pods: int, rate: float | None, seed: int, output: str) -> None:
    """Pods/s and p50/p99 submit-to-decision latency, plus the core's in-process pods/s."""
    from streams.bench import scheduler

    with harness.running(context.settings().broker) as running:
        result = scheduler.run(running, nodes, pods, rate, seed)
    if output == "json":
        click.echo(json.dumps(result))
        return
    e2e, core = result["end_to_end"], result["in_process"]
    click.echo(f"end to end ({nodes} nodes, {pods} pods, {'offered ' + str(rate) + '/s' if rate else 'saturated'}): "
               f"{e2e['pods_per_s']} pods/s, p50 {e2e['p50_ms']} ms, p99 {e2e['p99_ms']} ms "
               f"({e2e['decided']}/{e2e['pods']} decided)")
    if e2e["submit_to_decision_sent"]:
        stage = e2e["submit_to_decision_sent"]
        click.echo(f"  of which submit -> decision sent by the worker: p50 {stage['p50_ms']} ms, p99 {stage['p99_ms']} ms")
    click.echo(f"in process: {core['pods_per_s']} pods/s ({core['pods']} pods)")


@bench.command("nodes")
@click.option("--nodes", default=10000, show_default=True)
@click.option("--pods", default=20, show_default=True, help="Pods per node.")
@click.option("--rounds", default=3, show_default=True, help="NodeMetrics per node, one minute of event time apart.")
@click.option("--seed", default=1, show_default=True)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def nodes_cmd(nodes: int, pods: int, rounds: int, seed: int, output: str) -> None:
    """NodeMetric events/s into profiles plus batch/mid on one worker, and bytes of state per node."""
    from streams.bench import nodes as node_bench

    with harness.running(context.settings().broker) as running:
        result = node_bench.run(running, nodes, pods, rounds, seed)
    if output == "json":
        click.echo(json.dumps(result))
        return
    click.echo(f"{result['events']} NodeMetrics ({nodes} nodes x {pods} pods, {result['event_bytes']} B each): "
               f"{result['events_per_s']} events/s ({result['seconds']} s; produced in {result['produce_seconds']} s)")
    click.echo(f"state: {result['state_bytes_per_node']} bytes/node (setup took {result['setup_seconds']} s)")


@bench.command("actuation")
@click.option("--events", default=200, show_default=True, help="NodeMetrics to produce (each changes the BE quota).")
@click.option("--rate", type=float, default=20.0, show_default=True, help="NodeMetrics per second.")
@click.option("--cgroups", type=click.Choice(["auto", "real", "fake"]), default="auto", show_default=True,
              help="Write a real cgroup v1 test tree (root) or a fake one; auto: real when root.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def actuation_cmd(events: int, rate: float, cgroups: str, output: str) -> None:
    """p50/p99 latency from a NodeMetric produced to the BE cgroup quota written by a node agent's actuator."""
    from streams.bench import actuation

    with harness.running(context.settings().broker) as running:
        result = actuation.run(running, events, rate, cgroups)
    if output == "json":
        click.echo(json.dumps(result))
        return
    stages = result["stages"]
    click.echo(f"NodeMetric -> cgroup write ({result['written']}/{result['events']} events at {result['rate_per_s']}/s, "
               f"{result['cgroup']}): p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms")
    for name, figures in stages.items():
        click.echo(f"  {name}: p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, max {figures['max_ms']} ms")


COMMANDS = (bench,)
