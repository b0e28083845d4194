"""Faust's delivery loop without four tasks per record.

The consumer's delivery loop (``Consumer._drain_messages``) hands every fetched record to the conductor
with ``await self.wait_first(callback(message), self.suspend_flow.wait())``: the delivery, raced against a
rebalance suspending the flow, so that a delivery stuck at a full buffer or at the suspended flow is
abandoned. ``Service.wait_first`` makes a task of each awaitable and of the service's stopped and crashed
events, four tasks and an ``asyncio.wait`` per record, though a delivery almost never waits: it puts the
event in the stream's buffer and returns. It was the costliest step of the consume path per record.

:func:`install_lean_drain` gives Faust's consumer a ``wait_first`` (the delivery loop is its only caller)
that first runs the delivery's first step in place: one that finishes there (it never waited) wins alone,
as it would have in the race, and the other awaitables are closed unstarted; one that fails there raises,
the others closed too. One that waits is resumed from where it stopped inside Faust's own race
(:func:`resumed`), so a stuck delivery is still abandoned when the flow is suspended. A stopped or crashed
consumer races as before. Checked against faust-streaming 0.15.3 (``FAUST_VERSION``) and mode-streaming
0.7.1.
"""

from __future__ import annotations

import asyncio


def install_lean_drain() -> None:
    """Patch Faust's consumer (idempotent)."""
    from faust.transport.consumer import Consumer

    if not getattr(Consumer, "_koord_lean_drain", False):
        patch_wait_first(Consumer)


def patch_wait_first(cls: type) -> None:
    """Wrap ``wait_first`` of ``cls``, a class with mode's ``Service`` interface (``_stopped``, ``_crashed``)."""
    from mode.services import WaitResults

    original = cls.wait_first

    async def wait_first(self, *coros, timeout=None):
        first = coros[0] if coros else None
        if timeout is None and asyncio.iscoroutine(first) and not (self._stopped.is_set() or self._crashed.is_set()):
            try:
                waiting_on = first.send(None)
            except StopIteration as finished:
                _close(coros[1:])
                return WaitResults([first], [finished.value], False)
            except BaseException:
                _close(coros[1:])
                raise
            coros = (resumed(first, waiting_on), *coros[1:])
        return await original(self, *coros, timeout=timeout)

    cls.wait_first = wait_first
    cls._koord_lean_drain = True


def _close(awaitables) -> None:
    """Close the coroutines among ``awaitables``, unstarted: left to the garbage collector, each would warn
    that it was never awaited, during whatever runs then."""
    for other in awaitables:
        if asyncio.iscoroutine(other):
            other.close()


class resumed:
    """``coro``, which yielded ``waiting_on`` at its first step, as an awaitable that goes on from there: what
    the task running it sends or throws (a cancellation) goes to ``coro``, what ``coro`` yields to the task."""

    def __init__(self, coro, waiting_on) -> None:
        self.coro, self.waiting_on = coro, waiting_on

    def __await__(self):
        coro, yielded = self.coro, self.waiting_on
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as error:
                step, argument = coro.throw, error
            else:
                step, argument = coro.send, sent
            try:
                yielded = step(argument)
            except StopIteration as finished:
                return finished.value
