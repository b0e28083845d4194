"""The actuator on hostile paths and values, over real temporary trees with real symlinks.

Paths: no identifier or path text, however made (``..``, absolute, NUL, planted symlinks pointing up, out,
nowhere or in a loop), leads a write outside the cgroup root. Values: a requested value is applied as
asked (a memory limit only rounded down to a page, as the kernel does) or refused with nothing written;
it is never widened (memory ``-5`` must not become ``-1``, unlimited)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from node_agent.actuator import limits, paths
from streams.schemas import codec
from tests.node_agent.actuator.conftest import CgroupTree, actuation, make_actuator, snapshot
from tests.streams.schemas.strategies import records

LINKS = ("up", "abs", "dangling", "loop", "inside")
SEGMENTS = st.sampled_from(["..", ".", "", "/", "\x00", "/etc", "kubepods", "besteffort", "cpu.shares", *LINKS]) | \
    st.text(alphabet="ab./\x00-_:@", max_size=8)
PATH_TEXT = st.lists(SEGMENTS, min_size=1, max_size=6).map("/".join) | st.text(max_size=30)
TREES = st.sampled_from([("v1", "cgroupfs"), ("v1", "systemd"), ("v2", "cgroupfs"), ("v2", "systemd")])


def _plant_links(root: Path, outside: Path) -> None:
    """Symlinks in the tree: to the parent, to an absolute path outside, to nothing, to themselves, inside."""
    root.mkdir(parents=True, exist_ok=True)
    os.symlink("..", root / "up")
    os.symlink(outside, root / "abs")
    os.symlink(root / "missing", root / "dangling")
    os.symlink("loop", root / "loop")
    os.symlink(".", root / "inside")


@pytest.fixture(scope="module")
def linked_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("confined")
    (base / "outside").mkdir()
    _plant_links(base / "root", base / "outside")
    return base / "root"


@given(st.lists(PATH_TEXT, min_size=1, max_size=3))
def test_confined_paths_resolve_inside_the_root_or_are_refused(linked_root, parts):
    try:
        candidate = paths.confined(linked_root, *parts)
    except paths.PathProblem:
        return
    real_root = os.path.realpath(linked_root)
    assert os.path.commonpath([real_root, os.path.realpath(candidate)]) == real_root


@given(PATH_TEXT)
def test_accepted_host_application_paths_are_relative_plain_segments(text):
    try:
        accepted = paths.relative_cgroup_path(text)
    except paths.PathProblem:
        return
    assert not accepted.startswith("/") and "\x00" not in accepted
    assert all(segment not in ("", ".", "..") for segment in accepted.split("/"))


def _apply_in_fresh_tree(layout: tuple[str, str], record: dict, *,
                         link_file: str | None = None) -> tuple[dict, CgroupTree, bool]:
    """Apply ``record`` to a fresh tree that has planted symlinks beside the cgroups, and an outside
    directory; returns the ack, the tree, and whether anything outside the tree changed."""
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        outside = base / "outside"
        outside.mkdir()
        (outside / "cpu.shares").write_text("1024\n")
        (outside / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        tree = CgroupTree(base / "cgroup", *layout)
        hierarchy = tree.root / "cpu" if tree.version == "v1" else tree.root
        _plant_links(hierarchy / "hostapps", outside)
        if link_file is not None:
            victim = tree.path("cpu", dict(tree.layout.tiers())["BestEffort"], link_file)
            victim.unlink()
            os.symlink(outside / "cpu.shares", victim)
        before = snapshot(outside)
        ack = make_actuator(tree).apply(record)
        return ack, tree, snapshot(outside) != before


@given(TREES, PATH_TEXT.map(lambda text: "hostapps/" + text), st.integers(2, 262144))
def test_no_host_application_path_writes_outside_the_tree(layout, cgroup_path, shares):
    ack, _, escaped = _apply_in_fresh_tree(
        layout, actuation({"cgroup.path": cgroup_path, "cpu.shares": str(shares)}, kind="hostapp", target="app"))
    assert not escaped
    assert ack["applied"] is False or ack["values"]


@given(TREES)
def test_a_symlinked_cgroup_file_is_refused_not_followed(layout):
    name = "cpu.shares" if layout[0] == "v1" else "cpu.weight"
    ack, _, escaped = _apply_in_fresh_tree(layout, actuation({"cpu.shares": "2"}), link_file=name)
    assert not escaped
    assert ack["applied"] is False and ack["error"]


MEMORY_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-5, 5),
    st.sampled_from([limits.MIN_MEMORY_LIMIT_BYTES - 1, limits.MIN_MEMORY_LIMIT_BYTES, limits.MAX_MEMORY_LIMIT_BYTES,
                     limits.MAX_MEMORY_LIMIT_BYTES - 1, 2**63 - 1, 2**63, -(2**63)]),
).map(str) | st.sampled_from(["NaN", "nan", "inf", "-inf", "1e9", "-0", " -5 ", "0x10", "", "max", "-1.0", "5\x00"])


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


@given(TREES, MEMORY_VALUES)
def test_a_memory_limit_is_applied_as_asked_or_refused_never_widened(layout, requested):
    ack, tree, escaped = _apply_in_fresh_tree(layout, actuation({"memory.limit_in_bytes": requested}))
    assert not escaped
    wanted = _int_or_none(requested.strip())
    if not ack["applied"]:
        assert ack["error"].startswith("rejected (bad-value)"), ack["error"]
        assert ack["values"] == {}
        return
    in_force = int(ack["values"]["memory.limit_in_bytes"])
    assert wanted is not None
    if wanted == limits.UNLIMITED:
        assert in_force == limits.UNLIMITED
    else:
        assert limits.MIN_MEMORY_LIMIT_BYTES <= wanted < limits.MAX_MEMORY_LIMIT_BYTES
        assert in_force == wanted // limits.PAGE_SIZE * limits.PAGE_SIZE


@given(TREES, st.integers(-(2**40), 2**40).map(str) | st.integers(-3, 3).map(str) | st.sampled_from(["NaN", "1e5"]))
def test_a_cpu_quota_is_applied_as_asked_or_refused_never_widened(layout, requested):
    ack, _, escaped = _apply_in_fresh_tree(layout, actuation({"cpu.cfs_quota_us": requested}))
    assert not escaped
    if not ack["applied"]:
        assert ack["error"].startswith("rejected (bad-value)"), ack["error"]
        return
    assert int(ack["values"]["cpu.cfs_quota_us"]) == int(requested)


ACTUATIONS = st.builds(
    lambda record, kind, target, mechanism, values: {**record, "nodeName": "fake-node", "targetKind": kind,
                                                      "targetId": target, "mechanism": mechanism, "values": values},
    records("Actuation"), st.sampled_from(["qos", "pod", "container", "hostapp", "node", "other"]),
    st.sampled_from(["BE", "LS", "LSR", "fake-node", "app", "aaaaaaaa-0000-0000-0000-000000000001",
                     "aaaaaaaa-0000-0000-0000-000000000001/" + "0123456789abcdef" * 4, "../..", "/etc"]) | st.text(max_size=12),
    st.sampled_from(["cgroup", "resctrl", "tc", "other"]),
    st.dictionaries(st.sampled_from(["cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us", "memory.limit_in_bytes",
                                     "cpuset.cpus", "cgroup.path", "cpu.idle", "l3_percent", "total_bps"]) | st.text(max_size=8),
                    MEMORY_VALUES | PATH_TEXT, max_size=3))


@given(TREES, ACTUATIONS)
def test_any_actuation_is_acknowledged_and_writes_nothing_outside_the_tree(layout, record):
    ack, _, escaped = _apply_in_fresh_tree(layout, record)
    assert not escaped
    assert ack["nodeName"] == "fake-node" and (ack["applied"] or ack["error"])
    codec.encode("ActuationAck", ack)
