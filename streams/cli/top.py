"""``koord top nodes|pods``: a live view of usage versus request versus allocatable.

Reads the read model every ``--interval`` seconds and redraws; ``--once``
prints one frame (for scripts). Columns show ``usage/requested/allocatable``
for cpu and memory, then ``requested/allocatable`` of batch and mid (what the
node's BE and mid pods request of the pool the node reclaims), every quantity in one
Kubernetes form (``human``): cpu in cores, or millicores under one core
(``3.5``, ``350m``), bytes in binary units (``1.2Gi``, ``512Mi``); a percent stays
a percent. A node whose stored row cannot be read is listed as ``<name> (broken)``.
"""

from __future__ import annotations

import time

import click

from state import queries
from streams.cli.readmodel import open_for_view
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY


CPU_LIKE = ("cpu", BATCH_CPU, MID_CPU)
"""Counted in millicores."""
MEMORY_LIKE = ("memory", BATCH_MEMORY, MID_MEMORY)
"""Counted in bytes."""
BINARY_UNITS = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def _decimal(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def human(resource: str, value: int) -> str:
    """One Kubernetes quantity per cell: cpu in cores with at most one decimal ("3.5", "64"), under one core in
    millicores ("350m"); bytes in the largest binary unit that shows at least 1 with at most one decimal
    ("1.2Gi", "512Mi"), under 1Ki in bytes; other counts as they are."""
    if resource in CPU_LIKE:
        return _decimal(round(value / 1000, 1)) if abs(value) >= 1000 or value == 0 else f"{value}m"
    if resource in MEMORY_LIKE:
        for unit, size in BINARY_UNITS:
            shown = round(value / size, 1)
            if abs(shown) >= 1:
                return _decimal(shown) + unit
    return str(value)


def _q(resource: str, values: dict, key: str | None = None) -> str:
    value = values.get(key or resource)
    return "-" if value is None else human(resource, value)


def _percent(used: int | None, of: int | None) -> str:
    return f"{100 * used / of:.0f}%" if used is not None and of else "-"


def node_rows(engine) -> list[list[str]]:
    rows = [["NAME", "CPU USE/REQ/ALLOC", "CPU%", "MEM USE/REQ/ALLOC", "MEM%", "BATCH-CPU REQ/ALLOC",
             "BATCH-MEM REQ/ALLOC", "MID-CPU REQ/ALLOC", "MID-MEM REQ/ALLOC"]]
    for node in queries.top_nodes(engine):
        use, req, alloc = node["usage"], node["requested"], node["allocatable"]
        rows.append([
            node["name"] + (" (broken)" if node.get("broken") else ""),
            f"{_q('cpu', use)}/{_q('cpu', req)}/{_q('cpu', alloc)}", _percent(use.get("cpu"), alloc.get("cpu")),
            f"{_q('memory', use)}/{_q('memory', req)}/{_q('memory', alloc)}",
            _percent(use.get("memory"), alloc.get("memory")),
            *(f"{_q(resource, req)}/{_q(resource, alloc)}" for resource in (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY)),
        ])
    return rows


def pod_rows(engine, namespace: str | None) -> list[list[str]]:
    rows = [["NAMESPACE", "NAME", "NODE", "CPU USE/REQ", "MEM USE/REQ"]]
    for pod in queries.top_pods(engine, namespace):
        use, req = pod["usage"], pod["requests"]
        rows.append([pod["namespace"], pod["name"], pod["node"] or "<pending>",
                     f"{_q('cpu', use)}/{_q('cpu', req)}", f"{_q('memory', use)}/{_q('memory', req)}"])
    return rows


def render(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


@click.command()
@click.argument("what", type=click.Choice(["nodes", "pods"]))
@click.option("-n", "--namespace", default=None, help="Pods: only this namespace.")
@click.option("--interval", default=2.0, show_default=True, help="Seconds between refreshes.")
@click.option("--once", is_flag=True, help="Print one frame and exit.")
def top(what: str, namespace: str | None, interval: float, once: bool) -> None:
    """Live usage vs request vs allocatable (batch and mid included)."""
    engine = open_for_view()
    while True:
        frame = render(node_rows(engine) if what == "nodes" else pod_rows(engine, namespace))
        if once:
            click.echo(frame)
            return
        click.clear()
        click.echo(f"koord top {what} — every {interval:g}s, Ctrl-C to stop\n\n{frame}")
        try:
            time.sleep(interval)
        except KeyboardInterrupt:
            return


COMMANDS = (top,)
