"""The verdict on a consumer group from two samples of its committed and end offsets."""

from streams.consumers import judge

P0, P1 = ("koord.pods", 0), ("koord.pods", 1)


def test_nothing_waiting_is_caught_up():
    sample = {P0: (5, 5), P1: (3, 3)}
    assert judge("g", sample, sample).state == "caught up"


def test_records_waiting_with_commits_moving_is_lagging():
    verdict = judge("g", {P0: (5, 9), P1: (3, 3)}, {P0: (7, 12), P1: (3, 3)})
    assert (verdict.state, verdict.waiting) == ("lagging", 5)


def test_records_waiting_on_a_partition_whose_commit_does_not_move_is_stuck_even_when_others_move():
    verdict = judge("g", {P0: (5, 9), P1: (3, 8)}, {P0: (5, 10), P1: (8, 8)})
    assert verdict.state == "stuck"
    assert verdict.stuck_on == (("koord.pods", 0, 5),)
    assert "STUCK: 5 records waiting, committed offset not moving at koord.pods[0]@5" == verdict.describe()


def test_a_partition_that_only_got_records_between_the_samples_is_not_yet_stuck():
    assert judge("g", {P0: (5, 5)}, {P0: (5, 6)}).state == "lagging"


def test_a_group_without_commits_says_so():
    assert judge("g", {}, {}).state == "no offsets"
