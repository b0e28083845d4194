"""CPU selection, ported from Koordinator's cpu_accumulator_test.go with its numbers (reference vectors NN-*).

Case ids are the NN id and the Go case name. As in Go, the available cpus are all cpus less the allocated
ones, and allocated cpus hold refcount 1 with the given exclusive policy.
"""

import pytest

from streams.scheduler.plugins.nodenumaresource.accumulator import (
    ERR_NOT_ENOUGH_CPUS, CPUAllocation, NotEnoughCPUs, spread, take_cpus)
from streams.scheduler.plugins.nodenumaresource.topology import CPUTopology, parse_cpuset

T = CPUTopology.build


def take(topology, needed, allocated="", bind="FullPCPUs", strategy="MostAllocated", exclusive="None",
         allocated_policy="None", preferred=frozenset()):
    """``takeCPUs`` as the Go tests call it: ``allocated`` is a cpu list, the rest is available."""
    held = parse_cpuset(allocated)
    available = {info.cpu_id for info in topology.cpus} - set(held)
    return take_cpus(topology, 1, available, {cpu: CPUAllocation(1, allocated_policy) for cpu in held}, needed,
                     bind, exclusive, strategy, preferred)


@pytest.mark.parametrize("topology, allocated, needed, want", [
    pytest.param(T(1, 1, 4, 2), "", 2, "0-1", id="NN-1 allocate on non-NUMA node"),
    pytest.param(T(1, 1, 4, 2), "0-1", 2, "2-3", id="NN-2 with allocated cpus"),
    pytest.param(T(2, 1, 4, 2), "", 8, "0-7", id="NN-3 allocate whole socket"),
    pytest.param(T(2, 1, 4, 2), "", 12, "0-11", id="NN-4 allocate across socket"),
    pytest.param(T(2, 1, 4, 2), "0-1", 8, "8-15", id="NN-5 whole socket with partially-allocated socket"),
    pytest.param(T(2, 2, 4, 2), "0-5,16-23", 6, "24-29", id="NN-6 in the smallest idle socket"),
    pytest.param(T(2, 2, 4, 2), "0-5,16-23", 12, "6-15,24-25", id="NN-7 most of CPUs on the same socket"),
    pytest.param(T(2, 2, 4, 2), "0-3,8-11", 4, "4-7", id="NN-8 from first socket"),
    pytest.param(T(2, 2, 2, 2), "0,2,4,8,12", 4, "10-11,14-15", id="NN-9 with less spread cpus"),
    pytest.param(T(2, 2, 2, 2), "0,2,4,8,10,12", 6, "5-7,13-15", id="NN-10 with the most spread cpus"),
    pytest.param(T(2, 2, 2, 2), "0,2,4,8-10,12", 6, "6-7,11,13-15",
                 id="NN-11 most spread cpus on the smallest idle cpus socket"),
])
def test_full_pcpus_most_allocated(topology, allocated, needed, want):
    assert take(topology, needed, allocated) == parse_cpuset(want)


@pytest.mark.parametrize("topology, allocated, needed, want", [
    pytest.param(T(2, 2, 4, 2), "0-5,16-23", 6, "8-13", id="NN-12 in the most idle socket"),
    pytest.param(T(2, 2, 4, 2), "0-3,8-11", 4, "16-19", id="NN-13 from second socket"),
    pytest.param(T(2, 2, 2, 2), "0,2,4,8,10,12", 6, "1,3,6-7,14-15", id="NN-14 with the less spread cpus 2"),
    pytest.param(T(2, 2, 4, 2), "0,2,4,8-10,12", 6, "16-21", id="NN-15 most spread cpus on the most idle socket 3"),
    pytest.param(T(1, 1, 4, 2), "", 2, "0-1", id="LeastAllocated allocate on non-NUMA node"),
    pytest.param(T(1, 1, 4, 2), "0-1", 2, "2-3", id="LeastAllocated with allocated cpus"),
    pytest.param(T(2, 1, 4, 2), "", 8, "0-7", id="LeastAllocated allocate whole socket"),
    pytest.param(T(2, 1, 4, 2), "", 12, "0-11", id="LeastAllocated allocate across socket"),
    pytest.param(T(2, 1, 4, 2), "0-1", 8, "8-15", id="LeastAllocated whole socket with partially-allocated socket"),
    pytest.param(T(2, 2, 4, 2), "0-5,16-23", 12, "6-15,24-25", id="LeastAllocated most of CPUs on the same socket"),
    pytest.param(T(2, 2, 2, 2), "0,2,4,8,12", 4, "10-11,14-15", id="LeastAllocated with less spread cpus"),
])
def test_full_pcpus_least_allocated(topology, allocated, needed, want):
    assert take(topology, needed, allocated, strategy="LeastAllocated") == parse_cpuset(want)


@pytest.mark.parametrize("topology, allocated, needed, most, least", [
    pytest.param(T(1, 1, 4, 2), "", 4, "0,2,4,6", "0,2,4,6", id="NN-16 allocate on non-NUMA node"),
    pytest.param(T(2, 1, 4, 2), "0,2", 4, "1,3,4,6", "8,10,12,14", id="NN-17 satisfied the partially-allocated socket"),
    pytest.param(T(2, 1, 4, 2), "0-3", 4, "8,10,12,14", "8,10,12,14", id="NN-18 cpus on full-free socket"),
    pytest.param(T(2, 1, 4, 2), "0,2", 6, "1,3-7", "8-12,14", id="NN-19 most of CPUs in the same socket"),
])
def test_spread_by_pcpus(topology, allocated, needed, most, least):
    assert take(topology, needed, allocated, bind="SpreadByPCPUs") == parse_cpuset(most)
    assert take(topology, needed, allocated, bind="SpreadByPCPUs", strategy="LeastAllocated") == parse_cpuset(least)


SPREAD_ORDER_T2242 = list(range(0, 32, 2)) + list(range(1, 32, 2))


def test_nn20_spread_order():
    """NN-20 TestCPUSpreadByPCPUs: first cpu of every core, then the second."""
    assert spread(T(2, 2, 4, 2), range(32)) == SPREAD_ORDER_T2242


@pytest.mark.parametrize("strategy", ["MostAllocated", "LeastAllocated"])
@pytest.mark.parametrize("needed", [17, 20, 31])
def test_nn20_fallback_takes_a_prefix_of_the_spread_order(strategy, needed):
    """More than a socket holds: the fallback walks the spread order of all free cpus of T(2,2,4,2)."""
    assert take(T(2, 2, 4, 2), needed, bind="SpreadByPCPUs", strategy=strategy) == sorted(
        SPREAD_ORDER_T2242[:needed])


@pytest.mark.parametrize("topology, allocated, allocated_policy, bind, exclusive, needed, want", [
    pytest.param(T(2, 1, 4, 2), "0,2", "PCPULevel", "SpreadByPCPUs", "PCPULevel", 4, "8,10,12,14",
                 id="NN-21 full-free socket with PCPULevel"),
    pytest.param(T(2, 1, 4, 2), "", "PCPULevel", "SpreadByPCPUs", "PCPULevel", 10, "0-4,6,8,10,12,14",
                 id="NN-22 overlapped cpus with PCPULevel"),
    pytest.param(T(2, 1, 8, 2), "0,2", "PCPULevel", "SpreadByPCPUs", "PCPULevel", 4, "4,6,8,10",
                 id="NN-23 large partially-allocated socket with PCPULevel"),
    pytest.param(T(2, 1, 8, 2), "0,2", "PCPULevel", "SpreadByPCPUs", "None", 4, "1,3,4,6",
                 id="NN-23 with none exclusive policy"),
    pytest.param(T(2, 1, 4, 2), "0,2", "NUMANodeLevel", "SpreadByPCPUs", "NUMANodeLevel", 4, "8,10,12,14",
                 id="NN-24 full-free socket with NUMANodeLevel"),
    pytest.param(T(2, 1, 4, 2), "0,2", "NUMANodeLevel", "SpreadByPCPUs", "None", 4, "1,3,4,6",
                 id="NN-24 partially-allocated socket without NUMANodeLevel"),
    pytest.param(T(2, 1, 4, 2), "0,2", "NUMANodeLevel", "FullPCPUs", "NUMANodeLevel", 4, "8-11",
                 id="NN-24 full-free socket with NUMANodeLevel with PCPUs"),
    pytest.param(T(2, 1, 4, 2), "0,2", "NUMANodeLevel", "FullPCPUs", "None", 4, "4-7",
                 id="NN-24 partially-allocated socket without NUMANodeLevel with PCPUs"),
])
def test_exclusive_policy(topology, allocated, allocated_policy, bind, exclusive, needed, want):
    got = take(topology, needed, allocated, bind=bind, exclusive=exclusive, allocated_policy=allocated_policy)
    assert got == parse_cpuset(want)


@pytest.mark.parametrize("bind, needed, want", [
    pytest.param("FullPCPUs", 4, "0-3", id="NN-34 binding FullPCPUs"),
    pytest.param("SpreadByPCPUs", 4, "0,2,4,6", id="NN-34 node policy SpreadByPCPUs"),
])
def test_nn34_reserve_cpusets(bind, needed, want):
    assert take(T(2, 1, 4, 2), needed, bind=bind) == parse_cpuset(want)


@pytest.mark.parametrize("bind", ["FullPCPUs", "SpreadByPCPUs"])
def test_nn34_not_enough_cpus(bind):
    with pytest.raises(NotEnoughCPUs, match=f"^{ERR_NOT_ENOUGH_CPUS}$"):
        take(T(2, 1, 4, 2), 24, bind=bind)


@pytest.mark.parametrize("strategy, want", [
    pytest.param("LeastAllocated", "16-19", id="NN-35 LeastAllocated"),
    pytest.param("MostAllocated", "4-7", id="NN-35 MostAllocated"),
])
def test_nn35_numa_allocate_strategy(strategy, want):
    assert take(T(2, 1, 8, 2), 4, "0-3", strategy=strategy) == parse_cpuset(want)


def test_zero_needed_takes_nothing():
    assert take(T(1, 1, 4, 2), 0, "0-7") == []


def test_take_preferred_cpus():
    """TestTakePreferredCPUs: available preferred cpus go first, the rest follows the usual order."""
    topology = T(2, 1, 16, 2)
    assert take(topology, 2, bind="SpreadByPCPUs") == [0, 2]
    assert take(topology, 2, bind="SpreadByPCPUs", preferred={0, 2}) == [0, 2]
    assert take(topology, 2, "0,2", bind="SpreadByPCPUs") == [1, 3]
    assert take(topology, 2, bind="SpreadByPCPUs", preferred={11, 13, 15, 17}) == [11, 13]


def test_preferred_cpus_then_the_rest():
    """One preferred cpu is available: it is taken, and the other pass picks the remaining three."""
    assert take(T(2, 1, 4, 2), 4, "0-1", bind="SpreadByPCPUs", preferred={1, 9}) == [2, 4, 6, 9]


def held_after(allocations, max_ref_count):
    """``getAvailableCPUs`` over the pods' cpusets: refcounts, and the cpus still below ``max_ref_count``."""
    held: dict[int, CPUAllocation] = {}
    for cpus in allocations:
        for cpu in cpus:
            held[cpu] = CPUAllocation(held.get(cpu, CPUAllocation(0)).ref_count + 1, "PCPULevel")
    return held, {cpu for cpu, allocation in held.items() if allocation.ref_count >= max_ref_count}


@pytest.mark.parametrize("topology, steps, full_after", [
    pytest.param(T(1, 1, 4, 2), [("FullPCPUs", 4, "0-3"), ("FullPCPUs", 5, "0,4-7"), ("FullPCPUs", 4, "2-5")],
                 "0,2-5", id="TestTakeCPUsWithMaxRefCount"),
    pytest.param(T(1, 1, 16, 2), [("SpreadByPCPUs", 16, "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30"),
                                  ("FullPCPUs", 16, "0-15"),
                                  ("SpreadByPCPUs", 16, "1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31"),
                                  ("FullPCPUs", 16, "16-31")],
                 "0-31", id="TestTakeCPUsSortByRefCount"),
])
def test_max_ref_count_two(topology, steps, full_after):
    """Pods in turn on a node sharing each cpu twice: fewer references win; ``full_after`` are then used up."""
    taken: list[list[int]] = []
    for bind, needed, want in steps:
        held, full = held_after(taken, 2)
        available = {info.cpu_id for info in topology.cpus} - full
        got = take_cpus(topology, 2, available, held, needed, bind, "None", "MostAllocated")
        assert got == parse_cpuset(want)
        taken.append(got)
    assert held_after(taken, 2)[1] == set(parse_cpuset(full_after))


def test_full_pcpus_core_by_core_can_take_one_cpu_more():
    """A Go quirk kept: the core-by-core step gives a whole core from the next socket (checked against Go)."""
    assert take(T(3, 1, 4, 2), 11) == parse_cpuset("0-9,16-17")


def test_result_does_not_depend_on_input_order():
    topology = T(2, 2, 4, 2)
    held = {cpu: CPUAllocation(1, "PCPULevel") for cpu in (0, 2, 4, 8, 9, 10, 12)}
    forward = take_cpus(topology, 1, set(range(32)) - set(held), held, 9, "SpreadByPCPUs", "PCPULevel",
                        "LeastAllocated")
    backward = take_cpus(topology, 1, frozenset(reversed(range(32))) - set(held), dict(reversed(held.items())), 9,
                         "SpreadByPCPUs", "PCPULevel", "LeastAllocated")
    assert forward == backward == parse_cpuset("16,18,20,22,24,26,28,30,17")


@pytest.mark.parametrize("bind, exclusive, strategy", [
    ("FullPCPU", "None", "MostAllocated"), ("FullPCPUs", "Core", "MostAllocated"), ("FullPCPUs", "None", "Most")])
def test_unknown_policy_names_are_rejected(bind, exclusive, strategy):
    with pytest.raises(ValueError, match="is not one of"):
        take_cpus(T(1, 1, 4, 2), 1, {0, 1}, {}, 1, bind, exclusive, strategy)
