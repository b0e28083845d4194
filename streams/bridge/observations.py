"""The shadow comparison's inputs, read from the read model: each live pod as the cluster holds it (the
manifest the bridge produced) and koordstream's decisions about it, oldest first."""

from __future__ import annotations

import json

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from state.models import Decision, Pod


def cluster_pods(engine: Engine) -> list[dict]:
    with Session(engine) as session:
        rows = session.scalars(select(Pod).where(Pod.deleted.is_(False), Pod.manifest.is_not(None))).all()
        return [json.loads(row.manifest) for row in rows]


def decisions_by_pod(engine: Engine) -> dict[str, list[dict]]:
    """Pod key -> its decisions in the order they were made (decisions are keyed by pod: one partition)."""
    found: dict[str, list[dict]] = {}
    with Session(engine) as session:
        for row in session.scalars(select(Decision).order_by(Decision.topic_offset)):
            found.setdefault(row.pod_key, []).append(
                {"result": row.result, "nodeName": row.node_name, "reason": row.reason, "message": row.message,
                 "uid": row.pod_uid})
    return found
