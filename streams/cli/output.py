"""Printing objects the way kubectl does: a table, wide table, JSON or YAML."""

from __future__ import annotations

import json

import click
import yaml

FORMATS = click.Choice(["table", "wide", "json", "yaml"])


def as_list(items: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": items}


def emit(items: list[dict], fmt: str, single: bool, columns, wide_columns=()) -> None:
    """``columns``: (header, function of the item) pairs for the table formats."""
    if fmt in ("json", "yaml"):
        payload = items[0] if single and items else as_list(items)
        text = json.dumps(payload, indent=2, sort_keys=False) if fmt == "json" else yaml.safe_dump(payload, sort_keys=False)
        click.echo(text.rstrip("\n"))
        return
    chosen = list(columns) + (list(wide_columns) if fmt == "wide" else [])
    rows = [[header for header, _ in chosen]] + [[str(fn(item)) for _, fn in chosen] for item in items]
    widths = [max(len(row[i]) for row in rows) for i in range(len(chosen))]
    for row in rows:
        click.echo("   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
