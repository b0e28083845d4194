"""An aggregate's cores are restored with Python's cyclic garbage collector paused (``streams.agents.states``)."""

from __future__ import annotations

import gc

from streams.agents.states import collector_paused


def test_a_restore_runs_with_the_collector_paused_and_leaves_it_as_it_was():
    seen = []
    for before in (True, False):
        (gc.enable if before else gc.disable)()
        with collector_paused():
            seen.append(gc.isenabled())
        assert gc.isenabled() is before
    gc.enable()
    assert seen == [False, False]
