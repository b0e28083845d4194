"""How Faust's consumer commits under exactly-once: three wraps of ``faust.transport.consumer.Consumer``,
each a no-op outside a transaction. Checked against faust-streaming 0.15.3 (``FAUST_VERSION``);
``streams.agents.transactions`` explains why the agents need them.

- :func:`install_commit_gate`: ``force_commit`` chooses the offsets to commit and commits them, so the
  whole of it runs with the app's batch gate taken (no batch between its first send and its
  acknowledgement), and a broken gate commits nothing.
- :func:`install_committed_offsets`: ``_new_offset`` commits after the highest acknowledged offset,
  since a ``read_committed`` consumer never sees the offsets of markers and aborted records and Faust's
  own rule (the end of the first run of consecutive acknowledged offsets) would stop short.
- :func:`install_commit_on_revocation`: ``on_partitions_revoked`` commits before Faust forgets the
  acknowledgements of the revoked partitions.
"""

from __future__ import annotations

from typing import Any, AsyncContextManager, Callable, Protocol


class CommitGate(Protocol):
    """What a commit waits for (``streams.agents.transactions.BatchGate``)."""

    broken: bool

    def commit(self) -> AsyncContextManager[None]: ...


def install_commit_gate(gate_of: Callable[[Any], CommitGate]) -> None:
    """Make Faust's consumer commit through ``gate_of(app)`` under exactly-once (idempotent)."""
    from faust.transport.consumer import Consumer

    if not getattr(Consumer, "_koord_commit_gate", False):
        gate_commits(Consumer, gate_of)


def gate_commits(cls: type, gate_of: Callable[[Any], CommitGate]) -> None:
    """Wrap ``force_commit`` of ``cls``, a class with Faust's consumer interface (``app``,
    ``in_transaction``): under exactly-once it runs inside ``gate_of(self.app).commit()``, and returns
    False without committing when that gate is broken."""
    original = cls.force_commit

    async def force_commit(self, *args, **kwargs):
        if not self.in_transaction:
            return await original(self, *args, **kwargs)
        gate = gate_of(self.app)
        async with gate.commit():
            if gate.broken:
                return False
            return await original(self, *args, **kwargs)

    cls.force_commit = force_commit
    cls._koord_commit_gate = True


def install_committed_offsets() -> None:
    """Make Faust's consumer commit after the highest acknowledged offset under exactly-once
    (idempotent)."""
    from faust.transport.consumer import Consumer

    if not getattr(Consumer, "_koord_committed_offsets", False):
        commit_after_highest_ack(Consumer)


def commit_after_highest_ack(cls: type) -> None:
    """Wrap ``_new_offset`` of ``cls``, a class with Faust's consumer interface (``_acked``,
    ``_acked_index``, ``_gap`` per partition): under exactly-once the offset after the highest
    acknowledged one, with the partition's acknowledgements and gaps forgotten."""
    original = cls._new_offset

    def _new_offset(self, tp):
        if not self.in_transaction:
            return original(self, tp)
        acked = self._acked[tp]
        if not acked:
            return None
        offset = max(acked) + 1
        acked.clear()
        self._acked_index[tp].clear()
        self._gap.pop(tp, None)
        return offset

    cls._new_offset = _new_offset
    cls._koord_committed_offsets = True


def install_commit_on_revocation() -> None:
    """Make Faust's consumer commit before it forgets the acknowledgements of revoked partitions under
    exactly-once (idempotent)."""
    from faust.transport.consumer import Consumer

    if not getattr(Consumer, "_koord_commit_on_revocation", False):
        commit_before_revocation(Consumer)


def commit_before_revocation(cls: type) -> None:
    """Wrap ``on_partitions_revoked`` of ``cls``, a class with Faust's consumer interface (its
    ``force_commit`` gated by :func:`gate_commits`): under exactly-once, commit first.

    Faust's revocation drops the acknowledgements not yet committed before anything commits them; the
    outputs of those events stay in the open transactions. A worker that gets the partitions back keeps
    their producers and transactions, reads the events again from the committed offsets, and its next
    commit publishes both outputs (the kill -9 test: the restarted worker, alone after the survivor
    stopped, forwarded three pods twice across the rebalance). Committing first publishes the outputs
    with their offsets; the gate's release does not yield, so no batch acknowledges events between
    that commit and Faust dropping the acknowledgements."""
    original = cls.on_partitions_revoked

    async def on_partitions_revoked(self, revoked):
        if self.in_transaction:
            await self.force_commit()
        return await original(self, revoked)

    cls.on_partitions_revoked = on_partitions_revoked
    cls._koord_commit_on_revocation = True
