"""Opening the read model for a view (``koord get``, ``explain``, ``top``), with a warning when what it
shows may not be the live cluster.

The read model outlives its broker (an embedded broker is gone after ``koord down``; a broker's topics
may be re-created), so a view first asks the configured broker for the incarnation of the topics the
read model was projected from (``state.incarnation``). When it differs, or the broker cannot be asked,
one warning line goes to stderr and the view still shows what the read model holds.
"""

from __future__ import annotations

import asyncio
import logging

import click
from sqlalchemy import Engine

from state import incarnation as read_model_incarnation
from state.db import SchemaVersionError
from streams.agents.projection import broker_incarnation
from streams.cli import context
from streams.settings import Settings

BROKER_TIMEOUT_S = 5.0
"""How long a view waits for the broker before warning that it is unreachable."""


def open_for_view(config: Settings | None = None) -> Engine:
    """The read model, after printing a warning on stderr if it may not describe the live cluster; a
    read model of another schema version is an error message, not a traceback."""
    config = config or context.settings()
    try:
        engine = context.read_model(config)
    except SchemaVersionError as error:
        raise click.ClickException(str(error)) from None
    warning = staleness(engine, config)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    return engine


def staleness(engine: Engine, config: Settings) -> str | None:
    """Why the read model of `engine` may not describe the broker `config` names, or None."""
    recorded = read_model_incarnation.recorded(engine)
    about = ("this read model records no cluster yet" if recorded is None
             else f"this read model is of {recorded.describe()}")
    try:
        bootstrap = context.bootstrap(config)
    except click.ClickException:
        return f"{about}; no broker is configured (KOORD_BROKER unset and `koord up` not running), so it may be stale"
    topics = [] if recorded is None else [name for name, _ in recorded.incarnation.topic_ids]
    logging.getLogger("aiokafka").addHandler(logging.NullHandler())
    try:
        current = asyncio.run(asyncio.wait_for(broker_incarnation(bootstrap, topics), BROKER_TIMEOUT_S))
    except Exception as error:
        shown = str(error) or type(error).__name__
        return f"the broker at {bootstrap} is unreachable ({shown}); {about}, it may be stale"
    if recorded is None:
        return None
    reason = read_model_incarnation.difference(recorded.incarnation, current)
    if reason is None:
        return None
    return (f"this read model is of {recorded.describe()}, which is not the broker at {bootstrap} ({reason}); "
            f"what follows may be a cluster that no longer exists")

