"""``koord kube up|down|status``: a local kube-apiserver and etcd for development and tests."""

from __future__ import annotations

import json

import click

from pathlib import Path

from streams.cli import context
from streams.kube.controlplane import ControlPlane, MissingPrerequisite
from streams.kube.node import LocalNode, NodeRefused

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
"""Koordinator's custom resource definitions, installed by ``koord kube up``."""


def _plane() -> ControlPlane:
    return ControlPlane(context.settings().home.resolve() / "kube")


def _node(plane: ControlPlane) -> LocalNode:
    return LocalNode(plane.directory / "node", plane.pki)


@click.group()
def kube() -> None:
    """A real kube-apiserver and etcd on loopback (built with Go on first use), and with --node a real node:
    containerd and kubelet."""


@kube.command()
@click.option("--node", "with_node", is_flag=True,
              help="Also start a real node (root only): containerd and runc from Debian's packages (installed "
                   "when missing), kubelet built with Go, a bridge CNI network, local pause and busybox images.")
def up(with_node: bool) -> None:
    """Start etcd and kube-apiserver in the background, install Koordinator's CRDs (deploy/crds) and the
    koordinator-system namespace; print the kubeconfig to use. With --node, a Node named koord-node that
    runs pods."""
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
    if with_node:
        node = _node(plane)
        click.echo("starting containerd and kubelet (a cold kubelet build takes minutes)...", err=True)
        try:
            node_state = node.start(state["server"])
        except (MissingPrerequisite, NodeRefused) as error:
            plane.stop()
            raise click.ClickException(str(error)) from None
        node.children.clear()
        click.echo(f"node {node_state['name']} Ready: containerd at {node_state['socket']}, pods in "
                   f"{node_state['podSubnet']} on {node_state['bridge']}, cgroups under {node_state['cgroupRoot']}")
    click.echo(f"export KUBECONFIG={state['kubeconfig']}")


@kube.command()
def down() -> None:
    """Stop the node (its pods, containerd, kubelet; their mounts, network namespaces, bridge and cgroups),
    then the API server and etcd that `koord kube up` started."""
    plane = _plane()
    node = _node(plane)
    if not plane.state() and not node.state():
        raise click.ClickException("no local control plane is running")
    if node.state():
        node.stop()
        click.echo("node stopped")
    if plane.state():
        plane.stop()
    click.echo("control plane stopped")


@kube.command()
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def status(output: str) -> None:
    """Whether the local control plane runs, its address and kubeconfig."""
    plane = _plane()
    state = plane.state() or {}
    node = _node(plane).state()
    report = {"running": plane.running(), **state, "node": node}
    if output == "json":
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"control plane: {'running' if report['running'] else 'not running'}")
    if state:
        click.echo(f"server: {state['server']}  kubeconfig: {state['kubeconfig']}")
    if node:
        click.echo(f"node: {node['name']}  containerd: {node['socket']}  cgroups: {node['cgroupRoot']}")


COMMANDS = (kube,)
