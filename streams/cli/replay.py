"""``koord replay scheduling|node|routing``: audit an aggregate by re-running its inbox, or ask what-if.

Audit: the inbox is read back from the broker (to the Fetch high watermark),
run through the pure core from its first record (``streams.replay.run``),
and every output is matched by decision id with the recorded output topics
(``streams.replay.compare``). Exits 1 unless every recorded output in the
window is reproduced and nothing else is emitted. The recording is read
after the replay ran and re-read for up to ``--settle`` seconds while the
replay has outputs it lacks: a live worker may still be writing those of
the last inbox records.

What-if (``--config FILE``): the same inbox under another configuration,
compared with the replay of the unchanged inbox (``streams.replay.whatif``);
nothing is written to any topic.

Routing: the domain router's inbox, and the pods it read from their source topic as the scheduling inbox holds
them, through fresh ``DomainTable`` s, its routes compared with the scheduling inbox (``streams.replay.routes``).

The node aggregate is configured from the environment as the worker is
(``NodeAggregateSettings.from_environment``): replaying signed actuations
needs the worker's ``KOORD_ACTUATION_KEY``. Inbox records are verified with the record key of the home
(``streams.signing``), as the worker verified them.
"""

from __future__ import annotations

import asyncio
import json
import time

import click

from streams import routing
from streams.cli import context
from streams.inbox import InboxReader, inbox_incarnation
from streams.nodeaggregate.settings import NodeAggregateSettings
from streams.objects import ManifestError
from streams.outputs import OUTPUT_TOPICS
from streams.replay import routes, run, whatif
from streams.replay.compare import Report, compare_by_schema, total
from streams.replay.reader import read_topic
from streams.signing import signer

SETTLE_POLL_S = 1.0


@click.command()
@click.argument("aggregate", type=click.Choice([run.SCHEDULING, run.NODE, routes.ROUTING]))
@click.option("--domain", default=None, help="scheduling, routing: only this scheduling domain.")
@click.option("--node", default=None, help="node: only this node (its inbox partition is replayed whole).")
@click.option("--from", "start", default=None,
              help="Compare the outputs of inbox events from this ISO time, epoch ms, or inbox offset on.")
@click.option("--to", "end", default=None, help="... up to this one (inclusive); same forms as --from.")
@click.option("--config", "config_file", default=None,
              help="What-if: run with this slo-controller-config ConfigMap (node) or "
                   "KubeSchedulerConfiguration (scheduling) instead of the inbox's.")
@click.option("--settle", default=10.0, show_default=True,
              help="Seconds to wait for a live worker to record the outputs of the last inbox records.")
@click.option("--show", default=20, show_default=True, help="Divergences or what-if rows printed in full.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def replay(aggregate: str, domain: str | None, node: str | None, start: str | None, end: str | None,
           config_file: str | None, settle: float, show: int, output: str) -> None:
    """Replay an aggregate's inbox and compare with what it recorded, or run a what-if with --config;
    ``routing`` replays the domain router and compares its routes with the scheduling inbox."""
    if aggregate == routes.ROUTING:
        if node is not None or start or end or config_file:
            raise click.UsageError("`replay routing` takes --domain, --settle, --show and -o only")
        _replay_routing(domain, settle, show, output)
        return
    if domain is not None and aggregate != run.SCHEDULING:
        raise click.UsageError("--domain applies to `replay scheduling` and `replay routing`")
    if node is not None and aggregate != run.NODE:
        raise click.UsageError("--node applies to `replay node`")
    try:
        window = run.Window(run.Bound.parse(start) if start else None, run.Bound.parse(end) if end else None)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    config_override = None
    if config_file is not None:
        try:
            config_override = whatif.load_config(config_file, aggregate)
        except ManifestError as error:
            raise click.ClickException(str(error)) from None
    config = context.settings()
    bootstrap, topology = context.bootstrap(config), context.topology(config)
    inbox = topology.name(run.INBOX_IDS[aggregate])
    events, undecodable = asyncio.run(_read_inbox(bootstrap, topology, run.INBOX_IDS[aggregate]))
    if domain is not None and not any(key == domain for key, _ in events):
        raise click.ClickException(f"the inbox {inbox} holds no record of domain {domain!r}")
    if node is not None and not run.partitions_of(events, node):
        raise click.ClickException(f"the inbox {inbox} holds no record of node {node!r}")
    node_settings = NodeAggregateSettings.from_environment()
    caused = run.replay(aggregate, events, domain=domain, node=node, node_settings=node_settings)
    header = {"aggregate": aggregate, "inbox": inbox, "events": len(caused), "undecodable": len(undecodable),
              "window": window.describe(), "domain": domain, "node": node}
    if config_override is not None:
        _what_if(aggregate, events, caused, config_override, window, domain, node, node_settings, header, show,
                 output)
        return
    schemas = run.compared_schemas(aggregate, OUTPUT_TOPICS)
    concerns = run.subject_filter(node)
    replayed = run.replayed_outputs(caused, window, concerns)
    topics = sorted({topology.name(topic_id) for topic_id in schemas.values()})
    deadline = time.monotonic() + settle
    while True:
        records = [r for topic in topics for r in asyncio.run(read_topic(bootstrap, topic))]
        recorded = run.recorded_outputs(run.decode_outputs(records, schemas), inbox, caused, window, concerns)
        reports = compare_by_schema(recorded, run.as_recorded(replayed, records))
        overall = total(reports.values())
        if not overall.extra or time.monotonic() >= deadline:
            break
        time.sleep(SETTLE_POLL_S)
    header["deadLetters"] = run.dead_letters(caused)
    if output == "json":
        click.echo(json.dumps({**header, "outputs": {s: r.to_dict() for s, r in reports.items()},
                               "total": overall.to_dict(), "ok": overall.ok}, indent=2))
    else:
        _print_audit(header, reports, overall, replayed, show)
    if not overall.ok:
        raise SystemExit(1)


def _replay_routing(domain: str | None, settle: float, show: int, output: str) -> None:
    """The domain router's audit (``streams.replay.routes``): exits 1 unless every domain's routes match."""
    config = context.settings()
    bootstrap, topology = context.bootstrap(config), context.topology(config)
    inbox, scheduling = topology.name(routing.ROUTING_INBOX), topology.name(routing.SCHEDULING_INBOX)
    events, undecodable = asyncio.run(_read_inbox(bootstrap, topology, routing.ROUTING_INBOX))
    reader = InboxReader.of(topology, routing.SCHEDULING_INBOX, asyncio.run(inbox_incarnation(bootstrap, scheduling)),
                            signer(config, create=False))
    deadline = time.monotonic() + settle
    while True:
        held = run.decode(asyncio.run(read_topic(bootstrap, scheduling)), reader)[0]
        replayed = routes.replay(events, domain, held)
        reports = routes.compare(replayed, routes.recorded(held, domain))
        ok = all(report.ok for report in reports.values())
        if ok or time.monotonic() >= deadline:
            break
        time.sleep(SETTLE_POLL_S)
    if domain is not None and domain not in reports:
        raise click.ClickException(f"the domain router sent nothing to domain {domain!r}")
    header = {"aggregate": routes.ROUTING, "inbox": inbox, "events": replayed.events, "undecodable": len(undecodable),
              "deadLetters": replayed.dead_letters, "domain": domain}
    if output == "json":
        click.echo(json.dumps({**header, "domains": {d: r.to_dict() for d, r in reports.items()}, "ok": ok},
                              indent=2))
    else:
        scope = f", domain {domain}" if domain else ""
        click.echo(f"replay routing: {inbox}, {replayed.events} events ({len(undecodable)} undecodable, "
                   f"{replayed.dead_letters} refused){scope}; routes compared with {scheduling}")
        _table([("DOMAIN", "REPRODUCED", "MISSING", "EXTRA", "OUT OF ORDER")] + [
            (d, str(r.reproduced), str(len(r.missing)), str(len(r.extra)),
             ",".join(map(str, r.out_of_order)) or "-") for d, r in reports.items()])
        for d, report in reports.items():
            described = report.to_dict()
            for label, found in (("missing (replayed, not held)", described["missingRoutes"]),
                                 ("extra (held, not replayed)", described["extraRoutes"])):
                if found:
                    more = f" ... and {len(found) - show} more" if len(found) > show else ""
                    click.echo(f"\n{d}: {label}: {', '.join(found[:show])}{more}")
        click.echo("\nOK: every route reproduced" if ok else "\nFAILED: the routes do not match")
    if not ok:
        raise SystemExit(1)


async def _read_inbox(bootstrap: str, topology, inbox_id: str) -> tuple[list, list]:
    """The inbox's events and undecodable records, decoded as the live aggregates decode them: with the
    inbox's incarnation token (part of every decision id) and the signatures verified with the home's record
    key (``streams.signing``; read unverified where the home has none)."""
    inbox = topology.name(inbox_id)
    records = await read_topic(bootstrap, inbox)
    reader = InboxReader.of(topology, inbox_id, await inbox_incarnation(bootstrap, inbox), signer(create=False))
    return run.decode(records, reader)


def _print_audit(header: dict, reports: dict[str, Report], overall: Report, replayed: dict[str, list[dict]],
                 show: int) -> None:
    scope = f", domain {header['domain']}" if header["domain"] else f", node {header['node']}" if header["node"] else ""
    click.echo(f"replay {header['aggregate']}: {header['inbox']}, {header['events']} events "
               f"({header['undecodable']} undecodable){scope}; comparing {header['window']}")
    rows = [("OUTPUT", "REPRODUCED", "DIVERGED", "MISSING", "EXTRA", "CONFLICTING")]
    for schema, report in [*reports.items(), ("total", overall)]:
        rows.append((schema, str(report.reproduced), str(len(report.diverged)), str(len(report.missing)),
                     str(len(report.extra)), str(len(report.conflicting))))
    _table(rows)
    by_id = {record["decisionId"]: (schema, record) for schema, records in replayed.items() for record in records}
    for divergence in overall.diverged[:show]:
        schema, record = by_id[divergence.decision_id]
        click.echo(f"\ndiverged {schema} {divergence.decision_id} ({_subject(record)}, caused by "
                   f"{_cause(record)}):")
        for line in divergence.differences:
            click.echo(f"  {line}")
    for label, ids in (("missing (recorded, not replayed)", overall.missing),
                       ("extra (replayed, not recorded)", overall.extra),
                       ("conflicting (recorded twice with different content)", overall.conflicting)):
        if ids:
            more = f" ... and {len(ids) - show} more" if len(ids) > show else ""
            click.echo(f"\n{label}: {', '.join(ids[:show])}{more}")
    hidden = len(overall.diverged) - show
    if hidden > 0:
        click.echo(f"\n... {hidden} more divergences (-o json lists all)")
    click.echo("\nOK: every recorded output reproduced" if overall.ok else "\nFAILED: the replay does not match")
    if header["deadLetters"]:
        click.echo(f"(the replay dead-lettered {header['deadLetters']} inbox events; dead letters are not compared)")


def _subject(record: dict) -> str:
    if "pod" in record:
        return f"pod {record['pod']['namespace']}/{record['pod']['name']}"
    if "nodeName" in record:
        return f"node {record['nodeName']}"
    return record.get("name") or "-"


def _cause(record: dict) -> str:
    cause = record.get("causation") or {}
    return ("{inboxTopic}[{inboxPartition}]@{inboxOffset} from {sourceTopic}[{sourcePartition}]@{sourceOffset}"
            .format(**cause) if cause else "-")


def _what_if(aggregate: str, events, caused, config_override: whatif.WhatIfConfig, window: run.Window,
             domain: str | None, node: str | None, node_settings: NodeAggregateSettings, header: dict, show: int,
             output: str) -> None:
    changed = run.replay(aggregate, whatif.with_config(events, config_override, aggregate), domain=domain, node=node,
                         node_settings=node_settings)
    header = {**header, "config": config_override.location}
    if aggregate == run.NODE:
        diff = whatif.node_diff(caused, changed, window, node)
        if output == "json":
            click.echo(json.dumps({**header, **diff, "headlines": whatif.node_headlines(diff)}, indent=2))
            return
        click.echo(f"what-if node with {config_override.location}: {header['events']} inbox events; "
                   f"{header['window']}; what-if minus baseline")
        for line in whatif.node_headlines(diff):
            click.echo(f"  {line}")
        rows = [("NODE", "RESOURCE", "FIRST", "LAST", "MIN", "MAX", "BASELINE", "WHAT-IF")]
        for name, resources in list(diff["nodes"].items())[:show]:
            for resource, d in resources.items():
                if d["min"] or d["max"]:
                    rows.append((name, resource, *(str(d[k]) for k in ("first", "last", "min", "max",
                                                                        "baselineLast", "whatIfLast"))))
        _table(rows)
        if len(diff["nodes"]) > show:
            click.echo(f"... {len(diff['nodes']) - show} more nodes (-o json lists all)")
        for schema, counts in diff["otherOutputs"].items():
            click.echo(f"{schema}: {sum(counts['baseline'].values())} in the baseline, "
                       f"{sum(counts['whatIf'].values())} in the what-if")
        return
    diff = whatif.scheduling_diff(caused, changed, window)
    if output == "json":
        click.echo(json.dumps({**header, **diff}, indent=2))
        return
    click.echo(f"what-if scheduling with {config_override.location}: {header['events']} inbox events; "
               f"{header['window']}")
    click.echo(f"  {diff['pods']} pods decided; {diff['placedDifferently']} placed differently; Unschedulable "
               f"{diff['unschedulable']['baseline']} -> {diff['unschedulable']['whatIf']}")
    rows = [("POD", "BASELINE", "WHAT-IF")] + [(d["pod"], str(d["baseline"]), str(d["whatIf"]))
                                               for d in diff["differences"][:show]]
    _table(rows)
    if len(diff["differences"]) > show:
        click.echo(f"... {len(diff['differences']) - show} more (-o json lists all)")


def _table(rows: list[tuple]) -> None:
    if len(rows) < 2:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


COMMANDS = (replay,)
