import dataclasses
import types

import pytest

from streams.replay import run
from streams.replay.compare import compare_by_schema, total
from tests.streams.replay.inbox import (NODE_INBOX, SCHEDULING_INBOX, T0, READERS, node, node_metric, pod,
                                        records)


def scheduling_events():
    recorded = records(SCHEDULING_INBOX, "default", node("n1"), node("n2"), pod("a", "3"), pod("b", "3"),
                       pod("c", "3"), pod("big", "9"))
    return run.decode(recorded, READERS[SCHEDULING_INBOX])[0]


def decisions(caused):
    return [(r["pod"]["name"], r["result"], r["nodeName"]) for c in caused for s, r in c.outputs
            if s == "SchedulingDecision"]


def test_scheduling_replay_decides_each_pod_in_inbox_order():
    assert decisions(run.replay_scheduling(scheduling_events())) == [
        ("a", "Scheduled", "n1"), ("b", "Scheduled", "n2"), ("c", "Unschedulable", None),
        ("big", "Unschedulable", None)]


def test_a_replay_reproduces_itself_by_decision_id():
    first, second = (run.replayed_outputs(run.replay_scheduling(scheduling_events())) for _ in range(2))
    report = compare_by_schema(first, second)["SchedulingDecision"]
    assert (report.reproduced, report.ok) == (4, True)


def test_a_changed_recording_is_a_divergence_naming_the_field():
    caused = run.replay_scheduling(scheduling_events())
    recorded = [(schema, dict(record)) for c in caused for schema, record in c.outputs
                if schema == "SchedulingDecision"]
    recorded[0][1]["nodeName"] = "n9"
    report = total(compare_by_schema(run.recorded_outputs(recorded, SCHEDULING_INBOX, caused),
                                     run.replayed_outputs(caused, concerns=lambda s, r: s == "SchedulingDecision"))
                   .values())
    assert (report.reproduced, report.ok) == (3, False)
    assert report.diverged[0].differences == ("nodeName: recorded 'n9', replay 'n1'",)


def test_outputs_of_inbox_records_the_replay_did_not_read_are_left_out():
    caused = run.replay_scheduling(scheduling_events())
    later = dict(caused[-1].outputs[0][1], decisionId="later",
                 causation={**caused[-1].outputs[0][1]["causation"], "inboxOffset": 99})
    recorded = [(s, r) for c in caused for s, r in c.outputs] + [("SchedulingDecision", later)]
    assert "later" not in {r["decisionId"] for r in run.recorded_outputs(recorded, SCHEDULING_INBOX, caused)[
        "SchedulingDecision"]}


def test_a_window_compares_only_the_outputs_of_its_events():
    caused = run.replay_scheduling(scheduling_events())
    window = run.Window(run.Bound("offset", 3), run.Bound("offset", 4))
    assert [r["pod"]["name"] for r in run.replayed_outputs(caused, window)["SchedulingDecision"]] == ["b", "c"]
    recorded = [(s, r) for c in caused for s, r in c.outputs]
    assert len(run.recorded_outputs(recorded, SCHEDULING_INBOX, caused, window)["SchedulingDecision"]) == 2


def test_only_the_asked_domain_is_replayed():
    other = [(key, dataclasses.replace(e, causation=dataclasses.replace(e.causation, inbox_offset=10 + i)))
             for i, (key, e) in enumerate(scheduling_events())]
    events = scheduling_events() + [("pool-b", e) for _, e in other]
    assert {c.key for c in run.replay(run.SCHEDULING, events, domain="pool-b")} == {"pool-b"}
    assert len(run.replay(run.SCHEDULING, events)) == 12


def test_an_undecodable_record_is_reported_and_skipped():
    good = records(SCHEDULING_INBOX, "default", node("n1"))[0]
    bad = types.SimpleNamespace(topic=SCHEDULING_INBOX, partition=0, offset=1, key=b"default", value=b"junk",
                                timestamp=0)
    events, undecodable = run.decode([good, bad], READERS[SCHEDULING_INBOX])
    assert [e.kind for _, e in events] == ["Node"]
    assert [(u.partition, u.offset) for u in undecodable] == [(0, 1)]


def test_node_replay_runs_one_partition_per_inbox_partition_and_filters_by_node():
    inbox = (records(NODE_INBOX, None, node("n1", "8"), node_metric("n1", "2", T0), partition=0)
             + records(NODE_INBOX, None, node("n2", "8"), node_metric("n2", "2", T0), partition=1))
    events, _ = run.decode(inbox, READERS[NODE_INBOX])
    caused = run.replay(run.NODE, events, node="n2")
    assert {c.event.causation.inbox_partition for c in caused} == {1}
    outputs = run.replayed_outputs(run.replay(run.NODE, events), concerns=run.subject_filter("n2"))
    assert {r["nodeName"] for r in outputs["NodeResource"]} == {"n2"}
    assert len(outputs["NodeResource"]) >= 1


@pytest.mark.parametrize(("text", "bound"), [
    pytest.param("42", run.Bound("offset", 42), id="offset"),
    pytest.param("1700000000000", run.Bound("time", 1_700_000_000_000), id="epoch-ms"),
    pytest.param("2023-11-14T22:13:20Z", run.Bound("time", 1_700_000_000_000), id="iso-utc"),
    pytest.param("2023-11-14T23:13:20+01:00", run.Bound("time", 1_700_000_000_000), id="iso-offset"),
    pytest.param("2023-11-14T22:13:20", run.Bound("time", 1_700_000_000_000), id="iso-naive-is-utc"),
])
def test_window_bounds(text, bound):
    assert run.Bound.parse(text) == bound


def test_a_bound_that_is_nothing_known_is_refused():
    with pytest.raises(ValueError, match="neither an ISO timestamp"):
        run.Bound.parse("yesterday")


def test_compared_schemas_follow_the_output_topics():
    topics = {"SchedulingDecision": "decisions", "ElasticQuotaStatus": "quotastatus", "NodeResource": "noderesources",
              "Eviction": "evictions", "DeadLetter": "deadletters", "Ack": "acks"}
    assert run.compared_schemas(run.SCHEDULING, topics) == {"SchedulingDecision": "decisions",
                                                            "ElasticQuotaStatus": "quotastatus",
                                                            "Eviction": "evictions"}
    assert run.compared_schemas(run.NODE, topics) == {"NodeResource": "noderesources", "Eviction": "evictions"}
