"""``koord apply`` and ``koord delete``: Kubernetes objects onto the source topics.

Every document is validated, and its record checked against the record size
limit (``streams.limits``), before anything is produced, so an invalid or
oversized document anywhere in the input applies nothing. What the CLI
produces carries the ``koord-ack`` header, so every aggregate that processes
it answers with an Ack listing the outputs it caused. ``--wait`` returns
once every applied object is through the aggregates and in the read model
(``state.progress``).

Source topics are consumed independently, so a Pod may reach the scheduler
before the Node applied just above it; it is then Unschedulable until a
later event retries it. With ``--wait`` the result must be final, so the
objects other than Pods are applied and waited for first, and the Pods
after them.

ClusterColocationProfiles are not produced: ``koord apply`` keeps them in the home and onboards the
Pods of this and every later apply with them, as ``koord webhook`` does in a cluster
(``streams.colocationprofile.onboarding``).
"""

from __future__ import annotations

import asyncio
import time

import click

from state.progress import Produced, wait_until_through
from streams.routing import ACK_HEADERS, INBOXES
from streams.cli import context
from streams.kafka import produce
from streams.colocationprofile.onboarding import ProfileStore, is_profile, onboard, profile_problems
from streams.colocationprofile.profile import parse_profile
from streams.koordinator.colocationprofile import KIND as PROFILE_KIND, PLURAL as PROFILE_PLURAL
from streams.objects import ManifestError, load_documents, parse_delete_target
from streams.objects.documents import STDIN, STDIN_LABEL
from streams.objects.kinds import lookup
from streams.objects.records import ObjectRecord, validate_documents
from streams.schemas import codec

PROFILE_NAMES = (PROFILE_KIND.lower(), PROFILE_PLURAL)


def profile_store() -> ProfileStore:
    return ProfileStore(context.settings().home / "colocationprofiles")


def onboarded_records(source: str, store: ProfileStore) -> tuple[dict[str, dict], list[ObjectRecord]]:
    """(the profiles of ``source`` by name, the records of its other objects with every Pod onboarded by the
    profiles in force); ManifestError lists every problem, and then nothing is applied."""
    documents = load_documents(source)
    if not documents:
        raise ManifestError(f"{STDIN_LABEL if str(source) == STDIN else source}: no objects to apply")
    applied, problems = profile_problems(d for d in documents if is_profile(d))
    others = [d for d in documents if not is_profile(d)]
    in_force = {**store.manifests(), **applied}
    others, onboarding = onboard(others, (parse_profile(m) for _, m in sorted(in_force.items())))
    problems += onboarding
    records: list[ObjectRecord] = []
    if others:
        try:
            records = validate_documents(others, ACK_HEADERS)
        except ManifestError as error:
            problems += error.problems
    if problems:
        raise ManifestError(problems)
    return applied, records


@click.command()
@click.option("-f", "--filename", "source", required=True, help="File, directory, or - for stdin.")
@click.option("--dry-run", is_flag=True, help="Validate and print; produce nothing.")
@click.option("--wait", is_flag=True, help="Return when the objects are through the aggregates and in the read model.")
@click.option("--timeout", default=60.0, show_default=True, help="Seconds --wait waits.")
def apply(source: str, dry_run: bool, wait: bool, timeout: float) -> None:
    """Apply Kubernetes-form objects (YAML or JSON, multi-document)."""
    store = profile_store()
    try:
        profiles, records = onboarded_records(source, store)
    except ManifestError as error:
        raise click.ClickException(str(error)) from None
    if dry_run:
        for name in profiles:
            click.echo(f"{PROFILE_KIND.lower()}/{name} valid (dry run)")
        for record in records:
            click.echo(f"{record.kind.lower()}/{record.key} valid (dry run)")
        return
    for name, manifest in profiles.items():
        store.save(manifest)
        click.echo(f"{PROFILE_KIND.lower()}/{name} configured (kept in KOORD_HOME, onboards the pods applied next)")
    if not records:
        return
    config = context.settings()
    names = context.topology(config).names()
    phases = [[r for r in records if r.kind != "Pod"], [r for r in records if r.kind == "Pod"]] if wait else [records]
    deadline = time.monotonic() + timeout
    for phase in filter(None, phases):
        sent = [(names[r.topic], r.key, codec.encode(r.schema, r.record)) for r in phase]
        placed = asyncio.run(produce(context.bootstrap(config), sent, headers=ACK_HEADERS))
        for record in phase:
            click.echo(f"{record.kind.lower()}/{record.key} applied")
        if wait:
            _wait(config, [Produced(r.kind, r.topic, r.key, r.record, names[r.topic], m.partition, m.offset)
                           for r, m in zip(phase, placed)], timeout, deadline)


@click.command()
@click.argument("kind", required=False)
@click.argument("name", required=False)
@click.option("-f", "--filename", "source", help="Delete the objects of this file.")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--wait", is_flag=True)
@click.option("--timeout", default=60.0, show_default=True)
def delete(kind: str | None, name: str | None, source: str | None, namespace: str, wait: bool, timeout: float) -> None:
    """Delete objects: `koord delete -f FILE` or `koord delete KIND NAME`."""
    if kind and name and kind.lower() in PROFILE_NAMES:
        if not profile_store().delete(name):
            raise click.ClickException(f"{PROFILE_KIND.lower()}/{name} not found")
        click.echo(f"{PROFILE_KIND.lower()}/{name} deleted")
        return
    try:
        if source:
            documents = load_documents(source)
            for document in filter(is_profile, documents):
                profile_name = ((document.body.get("metadata") or {}).get("name")) or ""
                if profile_store().delete(profile_name):
                    click.echo(f"{PROFILE_KIND.lower()}/{profile_name} deleted")
            others = [d for d in documents if not is_profile(d)]
            if not others:
                return
            targets = [(r.kind, r.topic, r.key) for r in validate_documents(others)]
        elif kind and name:
            targets = [(lookup(kind).kind, *parse_delete_target(kind, name, namespace))]
        else:
            raise click.UsageError("give -f FILE, or KIND and NAME")
    except ManifestError as error:
        raise click.ClickException(str(error)) from None
    config = context.settings()
    names = context.topology(config).names()
    placed = asyncio.run(produce(context.bootstrap(config), [(names[topic], key, None) for _, topic, key in targets],
                                 headers=ACK_HEADERS))
    for target_kind, _, key in targets:
        click.echo(f"{target_kind.lower()}/{key} deleted")
    if wait:
        _wait(config, [Produced(k, t, key, None, names[t], m.partition, m.offset)
                       for (k, t, key), m in zip(targets, placed)], timeout, time.monotonic() + timeout)


def _wait(config, produced: list[Produced], timeout: float, deadline: float) -> None:
    engine = context.read_model(config)
    topology = context.topology(config)
    partitions = {inbox: topology.spec(inbox).partitions for inbox in INBOXES}
    pending = wait_until_through(engine, partitions, produced, deadline)
    if pending:
        missing = ", ".join(f"{item.kind.lower()}/{item.key}" for item in pending)
        raise click.ClickException(
            f"timed out after {timeout:g}s waiting for {missing} to reach the read model "
            f"(is the worker and projection running? `koord status`)")


COMMANDS = (apply, delete)
