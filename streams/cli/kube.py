"""``koord kube up|down|status``: a local kube-apiserver and etcd for development and tests."""

from __future__ import annotations

import json

import click

from pathlib import Path

from streams.cli import context
from streams.kube.controlplane import ControlPlane, MissingPrerequisite

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
"""Koordinator's custom resource definitions, installed by ``koord kube up``."""


def _plane() -> ControlPlane:
    return ControlPlane(context.settings().home.resolve() / "kube")


@click.group()
def kube() -> None:
    """A real kube-apiserver and etcd on loopback (built with Go on first use; no kubelet)."""


@kube.command()
def up() -> None:
    """Start etcd and kube-apiserver in the background, install Koordinator's CRDs (deploy/crds) and the
    koordinator-system namespace; print the kubeconfig to use."""
    plane = _plane()
    if plane.running():
        raise click.ClickException(f"already running; kubeconfig {plane.kubeconfig} (`koord kube down` stops it)")
    try:
        click.echo("building or reusing kube-apiserver and etcd (a cold build takes minutes)...", err=True)
        state = plane.start()
    except MissingPrerequisite as error:
        raise click.ClickException(str(error)) from None
    crds = plane.install(CRDS)
    plane.processes.clear()
    click.echo(f"kube-apiserver {state['version']} at {state['server']}, {len(crds)} Koordinator CRDs installed")
    click.echo(f"export KUBECONFIG={state['kubeconfig']}")


@kube.command()
def down() -> None:
    """Stop the API server and etcd that `koord kube up` started."""
    plane = _plane()
    if not plane.state():
        raise click.ClickException("no local control plane is running")
    plane.stop()
    click.echo("control plane stopped")


@kube.command()
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def status(output: str) -> None:
    """Whether the local control plane runs, its address and kubeconfig."""
    plane = _plane()
    state = plane.state() or {}
    report = {"running": plane.running(), **state}
    if output == "json":
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"control plane: {'running' if report['running'] else 'not running'}")
    if state:
        click.echo(f"server: {state['server']}  kubeconfig: {state['kubeconfig']}")


COMMANDS = (kube,)
