from streams.replay.compare import compare, differences


def rec(decision_id, **fields):
    return {"decisionId": decision_id, "result": "Scheduled", "nodeName": "n1", **fields}


def test_everything_reproduced():
    report = compare([rec("a"), rec("b")], [rec("b"), rec("a")])
    assert (report.reproduced, report.ok) == (2, True)


def test_divergence_names_the_field():
    report = compare([rec("a")], [rec("a", nodeName="n2")])
    assert report.diverged[0].differences == ("nodeName: recorded 'n1', replay 'n2'",)
    assert not report.ok


def test_missing_and_extra():
    report = compare([rec("a"), rec("b")], [rec("a"), rec("c")])
    assert (report.missing, report.extra) == (("b",), ("c",))


def test_duplicate_recording_counts_once_but_conflicting_copies_are_reported():
    assert compare([rec("a"), rec("a")], [rec("a")]).ok
    report = compare([rec("a"), rec("a", nodeName="n9")], [rec("a")])
    assert report.conflicting == ("a",) and not report.ok


def test_nested_differences():
    assert differences({"causation": {"inboxOffset": 1}, "scores": [{"s": 1}]},
                       {"causation": {"inboxOffset": 2}, "scores": [{"s": 3}]}) == [
        "causation.inboxOffset: recorded 1, replay 2", "scores[0].s: recorded 1, replay 3"]
