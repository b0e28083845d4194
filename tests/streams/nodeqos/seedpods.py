"""The release articles' pod examples as the node aggregate learns them: the YAML (``tests/fixtures/seeds``)
becomes a Pod record (``streams.objects``), the scheduler's ``PodInfo`` and the SchedulingDecision that binds
it, with the fields ``streams.scheduler.domain`` writes (labels and annotations selected by ``streams.decisions``)."""

from __future__ import annotations

import copy

from streams import decisions
from streams.koordinator.classes import PRIORITY_NONE_NAME
from streams.objects import load_documents, to_record
from streams.objects.documents import Document
from streams.objects.podinfo import PodInfo, from_record
from tests.streams.noderesource.support import decision, event
from tests.streams.objects.seeds import seed_block


def seed_record(seed: str, number: int, *, name: str, uid: str, namespace: str = "default",
                labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
                node: str | None = None, status: dict | None = None):
    """The article's pod as a Pod record (``streams.objects.ObjectRecord``: ``key``, ``record``), named (the
    examples leave the name out), with ``uid``, extra ``labels``, when given ``annotations`` instead of the
    article's, and, for the pod as the kubelet reports it, ``spec.nodeName`` = ``node`` and ``status``."""
    [doc] = load_documents("-", stdin_text=seed_block(seed, number).text)
    body = copy.deepcopy(doc.body)
    metadata = body.setdefault("metadata", {})
    metadata.update(name=name, namespace=namespace, uid=uid)
    metadata["labels"] = {**(metadata.get("labels") or {}), **(labels or {})}
    if annotations is not None:
        metadata["annotations"] = annotations
    if node is not None:
        body.setdefault("spec", {})["nodeName"] = node
    if status is not None:
        body["status"] = status
    return to_record(Document(doc.file, doc.index, doc.line, body))


def seed_pod(seed: str, number: int, *, name: str, uid: str, namespace: str = "default",
             labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> PodInfo:
    """The scheduler's ``PodInfo`` of :func:`seed_record`'s pod."""
    record = seed_record(seed, number, name=name, uid=uid, namespace=namespace, labels=labels,
                         annotations=annotations)
    return from_record(record.key, record.record)


def bound(pod: PodInfo, node: str) -> dict:
    """The inbox event of the SchedulingDecision that binds ``pod`` to ``node``."""
    record = decision(pod.name, node, namespace=pod.namespace, qos=pod.qos_class or None,
                      priority=pod.priority, priority_class=pod.priority_class_raw or PRIORITY_NONE_NAME)
    record.update(pod={"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
                  requests=dict(pod.requests), limits=dict(pod.limits),
                  labels=decisions.selected(pod.labels, decisions.LABELS),
                  annotations=decisions.selected(pod.annotations, decisions.DECISION_ANNOTATIONS))
    return event("SchedulingDecision", node, record)


def released(pod: PodInfo, node: str, ts: int) -> dict:
    """The inbox event of the SchedulingDecision that ends ``pod`` on ``node``."""
    record = decision(pod.name, node, result="Released", namespace=pod.namespace)
    record["pod"]["uid"] = pod.uid
    return event("SchedulingDecision", node, record, ts=ts)
