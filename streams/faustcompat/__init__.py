"""Every use koordstream makes of Faust's internals: the patches of its classes and the private attributes
it reads or sets, each checked against the faust-streaming version pinned in ``pyproject.toml``
(:data:`FAUST_VERSION`) and tested on a stand-in (``tests/streams/faustcompat/``). Nothing outside this
package patches Faust or touches a private name of it, so an upgrade is checked here, module by module.

=================  ==========================================================================
``seek``           a seek after a rebalance waits for the record being delivered (a race)
``take``           ``take_events`` sleeps until the first event of a batch (idle wake-ups)
``commits``        the consumer's commits under exactly-once: gated, after the highest ack,
                   before a revocation
``highwaters``     a changelog's highwater for table recovery: Tansu's corrected, exactly-once's
                   from the broker
``fetchwait``      the worker consumer's fetch wait paced on Tansu
``fetchsession``   the worker consumer fetches in incremental fetch sessions on Kafka
``fetchgather``    the worker consumer's fetches wait a moment for more records while they flow, on Kafka
``workerconsumer`` the switch by which those three change the consumer Faust builds
``assignor``       the worker consumer assigns with Faust's assignor, also without tables
``flush``          the flush before a commit waits until the producer buffer is empty
``drain``          the delivery loop hands a record over without four tasks per record
``events``         a message's ``acked`` flag
``tables``         a table with raw values; a table write whose changelog record the caller sends
``changelogs``     table recovery skips a changelog record it cannot decode
``recovery``       table recovery reads the active changelogs in bulk, not record by record
``tablestart``     the table manager starts without its fixed one-second wait
``monitor``        Faust's Prometheus sensor without its per-event timing; the stream inbound time
                   Faust's livelock warning reads
``livelock``       that warning a WARNING during a catch-up; transactional commits stamp their time
=================  ==========================================================================
"""

from __future__ import annotations

from typing import Any, Callable

from streams.broker import fetchcancel
from streams.faustcompat.assignor import install_own_assignor
from streams.faustcompat.changelogs import install_skip_undecodable
from streams.faustcompat.commits import (CommitGate, install_commit_gate, install_commit_on_revocation,
                                         install_committed_offsets)
from streams.faustcompat.drain import install_lean_drain
from streams.faustcompat.fetchgather import install_fetch_gathering
from streams.faustcompat.fetchsession import install_fetch_sessions
from streams.faustcompat.fetchwait import install_fetch_pacing
from streams.faustcompat.flush import install_full_flush
from streams.faustcompat.highwaters import install_committed_highwaters, install_true_highwaters
from streams.faustcompat.livelock import install_catch_up_warnings, install_transactional_commit_times
from streams.faustcompat.recovery import install_bulk_recovery
from streams.faustcompat.seek import install_faust_seek_fix
from streams.faustcompat.tablestart import install_prompt_table_start
from streams.faustcompat.take import install_faust_take_fix

FAUST_VERSION = "0.15.3"
"""The faust-streaming version every module here was checked against; a test fails on any other."""


def install(tansu: bool, commit_gate: Callable[[Any], CommitGate], changelog_reader: Callable[[Any], Any]) -> None:
    """Install every patch (idempotent); the Tansu ones only when ``tansu``. ``commit_gate(app)`` is the
    gate commits wait for under exactly-once; ``changelog_reader(app)`` a new consumer without a group that
    table recovery reads changelogs with. The Tansu highwater fix goes first: the exactly-once one wraps it.
    aiokafka's own fix (``streams.broker.fetchcancel``) goes too: a worker whose broker is gone must still stop."""
    fetchcancel.install()
    if tansu:
        install_true_highwaters()
    install_fetch_pacing(tansu)
    install_fetch_sessions(not tansu)
    install_fetch_gathering(not tansu)
    install_own_assignor()
    install_faust_seek_fix()
    install_faust_take_fix()
    install_lean_drain()
    install_full_flush()
    install_commit_gate(commit_gate)
    install_commit_on_revocation()
    install_committed_highwaters()
    install_committed_offsets()
    install_skip_undecodable()
    install_bulk_recovery(changelog_reader)
    install_prompt_table_start()
    install_catch_up_warnings()
    install_transactional_commit_times()
