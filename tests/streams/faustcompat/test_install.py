"""``streams.faustcompat`` was checked against the faust-streaming installed, and installs every patch once,
the Tansu ones only on Tansu."""

from __future__ import annotations

import importlib.metadata

from faust.tables.base import Collection
from faust.tables.manager import TableManager
from faust.tables.recovery import Recovery
from faust.transport.consumer import Consumer
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

from streams import faustcompat
from streams.agents.transactions import batch_gate
from streams.app import changelog_reader


def test_the_installed_faust_is_the_version_the_patches_were_checked_against():
    assert importlib.metadata.version("faust-streaming") == faustcompat.FAUST_VERSION


def test_install_is_idempotent():
    faustcompat.install(tansu=False, commit_gate=batch_gate, changelog_reader=changelog_reader)
    patched = (Consumer.force_commit, Consumer._new_offset, Consumer.on_partitions_revoked, Consumer.perform_seek,
               AIOKafkaConsumerThread._highwaters, AIOKafkaConsumerThread._create_worker_consumer,
               Collection._new_changelog_topic, Collection.apply_changelog_batch, Recovery._seek_offsets,
               TableManager.on_start)
    faustcompat.install(tansu=False, commit_gate=batch_gate, changelog_reader=changelog_reader)
    assert (Consumer.force_commit, Consumer._new_offset, Consumer.on_partitions_revoked, Consumer.perform_seek,
            AIOKafkaConsumerThread._highwaters, AIOKafkaConsumerThread._create_worker_consumer,
            Collection._new_changelog_topic, Collection.apply_changelog_batch, Recovery._seek_offsets,
            TableManager.on_start) == patched
    assert all(getattr(cls, flag, False) for cls, flag in [
        (Consumer, "_koord_commit_gate"), (Consumer, "_koord_committed_offsets"),
        (Consumer, "_koord_commit_on_revocation"), (Consumer, "_koord_seek_fix"),
        (AIOKafkaConsumerThread, "_koord_committed_highwaters"), (AIOKafkaConsumerThread, "_koord_own_assignor"),
        (Collection, "_koord_skip_undecodable"), (Recovery, "_koord_bulk_recovery"),
        (TableManager, "_koord_prompt_start")])
