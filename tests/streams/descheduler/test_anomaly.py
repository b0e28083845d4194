"""The anomaly detector: Koordinator's ``Test_filterRealAbnormalNodes`` / ``Test_resetNodesAsNormal`` /
``Test_tryMarkNodesAsNormal`` vectors (AN-1..AN-6), on one detector per node, in event time."""

from streams.descheduler.anomaly import ANOMALY, OK, Detector


def detector(abnormal: int, normal: int) -> Detector:
    return Detector(abnormal, normal, 60_000)


def test_an2_one_abnormal_mark_is_not_enough_with_two_required():
    assert detector(2, 1).mark(False, 0) == OK


def test_an3_the_third_consecutive_abnormal_mark_makes_the_node_anomalous():
    d = detector(2, 1)
    assert [d.mark(False, t) for t in (0, 1, 2)] == [OK, OK, ANOMALY]


def test_an5_reset_clears_the_anomaly_and_its_counts():
    d = detector(2, 5)
    assert [d.mark(False, t) for t in (0, 1, 2)][-1] == ANOMALY
    d.reset(3)
    assert d.mark(False, 4) == OK


def test_an6_an_anomaly_ends_after_more_normal_marks_than_required():
    d = detector(2, 2)
    for t in (0, 1, 2):
        d.mark(False, t)
    assert [d.mark(True, t) for t in (3, 4, 5)] == [ANOMALY, ANOMALY, OK]


def test_an_anomaly_ends_when_its_timeout_passes_in_event_time():
    d = detector(1, 9)
    d.mark(False, 0)
    assert d.mark(False, 1) == ANOMALY
    assert d.mark(False, 60_002) == OK
