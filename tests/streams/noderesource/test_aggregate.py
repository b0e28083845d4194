from streams.events import Causation, InboxEvent
from streams.noderesource.aggregate import ECHO_MESSAGE, handle, initial_state


def node_event(offset, cpu=4000, deleted=False):
    cause = Causation("koord.inbox.node", 1, offset, "koord.nodes", 2, offset)
    record = None if deleted else {"metadata": {"name": "n1"}, "capacity": {"cpu": cpu}, "allocatable": {"cpu": cpu}}
    return InboxEvent(cause, 5000 + offset, "n1", "Node", record)


def test_node_event_echoes_allocatable_with_causation():
    state, out = handle(initial_state(), node_event(7))
    assert out == [{
        "decisionId": out[0]["decisionId"], "nodeName": "n1", "capacity": {"cpu": 4000}, "allocatable": {"cpu": 4000},
        "message": ECHO_MESSAGE, "timestamp": 5007,
        "causation": {"inboxTopic": "koord.inbox.node", "inboxPartition": 1, "inboxOffset": 7,
                      "sourceTopic": "koord.nodes", "sourcePartition": 2, "sourceOffset": 7},
    }]
    assert state["node"] == {"capacity": {"cpu": 4000}, "allocatable": {"cpu": 4000}}


def test_replayed_event_is_applied_once_and_ids_are_stable():
    state, first = handle(initial_state(), node_event(7))
    assert handle(state, node_event(7)) == (state, [])
    _, again = handle(initial_state(), node_event(7))
    assert again[0]["decisionId"] == first[0]["decisionId"]


def test_delete_clears_the_node():
    state, _ = handle(initial_state(), node_event(1))
    state, out = handle(state, node_event(2, deleted=True))
    assert state["node"] is None and out == []
