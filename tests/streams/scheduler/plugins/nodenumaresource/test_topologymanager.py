"""The NUMA topology manager: Koordinator's ``Test_checkExclusivePolicy`` and the merge of the policies."""

import pytest

from streams.scheduler.plugins.nodenumaresource.topologymanager import (
    EXCLUSIVE_PREFERRED, EXCLUSIVE_REQUIRED, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE,
    STATUS_IDLE, STATUS_SHARED, STATUS_SINGLE, Hint, check_exclusive_policy, iterate_masks, mask_of, mask_string,
    merge)

IDLE, SINGLE, SHARED = STATUS_IDLE, STATUS_SINGLE, STATUS_SHARED


@pytest.mark.parametrize("exclusive,nodes,statuses,expected", [
    (EXCLUSIVE_PREFERRED, [0], [SHARED, SHARED], True),
    (EXCLUSIVE_REQUIRED, [0], [IDLE, SINGLE], True),
    (EXCLUSIVE_REQUIRED, [0], [SHARED, SINGLE], False),
    (EXCLUSIVE_REQUIRED, [0], [SHARED, SHARED], False),
    (EXCLUSIVE_REQUIRED, [0], [SINGLE, SHARED], True),
    (EXCLUSIVE_REQUIRED, [0, 1], [SHARED, SINGLE], False),
    (EXCLUSIVE_REQUIRED, [0, 1], [SHARED, IDLE], True),
    (EXCLUSIVE_REQUIRED, [0, 1], [SHARED, SHARED], True),
], ids=["preferred", "idle-single", "shared-single", "shared-shared", "single-shared", "two-shared-single",
        "two-shared-idle", "two-shared-shared"])
def test_check_exclusive_policy(exclusive, nodes, statuses, expected):
    assert check_exclusive_policy(Hint(mask_of(nodes), True), exclusive, statuses) is expected


def test_masks_are_printed_and_iterated_as_go_does():
    assert [mask_string(m) for m in (1, 2, 3, 4, 5, 15)] == ["01", "10", "11", "100", "0101", "1111"]
    assert list(iterate_masks([0, 1, 2])) == [1, 2, 4, 3, 5, 6, 7]


def test_best_hint_is_preferred_then_narrowest_then_highest_score():
    hints = {"cpu": [Hint(1, True, score=10), Hint(2, True, score=60), Hint(3, False, score=99)]}
    best, admit, reasons = merge(POLICY_RESTRICTED, [0, 1], [hints], "", [IDLE, IDLE])
    assert (best.affinity, best.preferred, best.score, admit, reasons) == (2, True, 60, True, [])


def test_a_resource_without_any_hint_is_unsatisfied():
    best, admit, reasons = merge(POLICY_SINGLE_NUMA_NODE, [0, 1], [{"cpu": [], "memory": []}], "", [IDLE, IDLE])
    assert (admit, reasons) == (False, ["Unsatisfied NUMA cpu", "Unsatisfied NUMA memory"])


def test_single_numa_node_refuses_hints_spanning_numa_nodes_with_the_summary():
    hints = {"cpu": [Hint(3, True)], "memory": [Hint(3, True)]}
    best, admit, reasons = merge(POLICY_SINGLE_NUMA_NODE, [0, 1], [hints], "", [IDLE, IDLE])
    assert best == Hint(None, False)
    assert reasons == ["Unaligned NUMA Hint cause cpu prefer [11] among [11],memory prefer [11] among [11]"]


def test_restricted_joins_summaries_with_ampersands_and_best_effort_always_admits():
    hints = {"cpu": [Hint(3, False)], "memory": [Hint(1, True), Hint(3, False)]}
    _, admit, reasons = merge(POLICY_RESTRICTED, [0, 1], [hints], "", [IDLE, IDLE])
    assert not admit
    assert reasons == ["Unaligned NUMA Hint cause cpu prefer [] among [11] & memory prefer [01] among [01 11]"]
    best, admit, reasons = merge(POLICY_BEST_EFFORT, [0, 1], [hints], "", [IDLE, IDLE])
    assert admit and reasons == []
    assert best.affinity == 3


def test_required_exclusive_makes_a_shared_numa_node_not_preferred():
    hints = {"cpu": [Hint(1, True, score=90), Hint(2, True, score=10)]}
    best, admit, _ = merge(POLICY_SINGLE_NUMA_NODE, [0, 1], [hints], EXCLUSIVE_REQUIRED, [SHARED, IDLE])
    assert (best.affinity, admit) == (2, True)
