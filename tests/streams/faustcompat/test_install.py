"""``streams.faustcompat`` was checked against the faust-streaming installed, and installs every patch once,
the Tansu ones only on Tansu."""

from __future__ import annotations

import importlib.metadata

from faust.tables.base import Collection
from faust.transport.consumer import Consumer
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

from streams import faustcompat
from streams.agents.transactions import batch_gate


def test_the_installed_faust_is_the_version_the_patches_were_checked_against():
    assert importlib.metadata.version("faust-streaming") == faustcompat.FAUST_VERSION


def test_install_is_idempotent():
    faustcompat.install(tansu=False, commit_gate=batch_gate)
    patched = (Consumer.force_commit, Consumer._new_offset, Consumer.on_partitions_revoked, Consumer.perform_seek,
               AIOKafkaConsumerThread._highwaters, AIOKafkaConsumerThread._create_worker_consumer,
               Collection._new_changelog_topic, Collection.apply_changelog_batch)
    faustcompat.install(tansu=False, commit_gate=batch_gate)
    assert (Consumer.force_commit, Consumer._new_offset, Consumer.on_partitions_revoked, Consumer.perform_seek,
            AIOKafkaConsumerThread._highwaters, AIOKafkaConsumerThread._create_worker_consumer,
            Collection._new_changelog_topic, Collection.apply_changelog_batch) == patched
    assert all(getattr(cls, flag, False) for cls, flag in [
        (Consumer, "_koord_commit_gate"), (Consumer, "_koord_committed_offsets"),
        (Consumer, "_koord_commit_on_revocation"), (Consumer, "_koord_seek_fix"),
        (AIOKafkaConsumerThread, "_koord_committed_highwaters"), (AIOKafkaConsumerThread, "_koord_own_assignor"),
        (Collection, "_koord_skip_undecodable")])
