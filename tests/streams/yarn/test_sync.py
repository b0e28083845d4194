"""The YARN bridge's pure round (``streams.yarn.sync``) and what it reads of a ResourceManager."""

from __future__ import annotations

import http.server
import re
import threading

import pytest

from streams.broker.kraft import free_ports
from streams.yarn.resourcemanager import NodeManagerReport, ResourceManagerError, list_node_managers, parse_nodes
from streams.yarn.sync import plan

RM = "http://rm:8088"


def report(node_id="nm-a:8041", state="RUNNING", capacity=(8, 16_000), allocated=(2, 4_000), containers=2):
    return NodeManagerReport(node_id, node_id.split(":")[0], state, capacity[0], capacity[1], allocated[0],
                             allocated[1], containers)


def test_a_mapped_nodemanager_is_published_once_and_its_total_written_when_it_differs():
    first = plan([report()], {"nm-a:8041": "node-a"}, {"nm-a:8041": (6, 12_000)}, {}, {}, 100.0, RM, 5.0)
    assert [node for node, _ in first.publish] == ["node-a"]
    assert [(u.node_id, u.node_name, u.vcores, u.memory_mb) for u in first.updates] == [
        ("nm-a:8041", "node-a", 6, 12_000)]
    published = dict(first.publish)
    again = plan([report()], {"nm-a:8041": "node-a"}, {"nm-a:8041": (8, 16_000)}, published, {}, 101.0, RM, 5.0)
    assert (again.publish, again.updates, again.unknown) == ([], [], [])


def test_writes_are_rate_limited_per_nodemanager():
    args = ([report()], {"nm-a": "node-a"}, {"nm-a:8041": (6, 12_000)}, {})
    assert plan(*args, {"nm-a:8041": 98.0}, 100.0, RM, 5.0).updates == []
    assert len(plan(*args, {"nm-a:8041": 94.0}, 100.0, RM, 5.0).updates) == 1


def test_the_total_is_never_below_what_yarn_allocated():
    [update] = plan([report(allocated=(5, 10_000))], {"nm-a": "node-a"}, {"nm-a:8041": (3, 6_000)}, {}, {}, 0.0,
                    RM, 0.0).updates
    assert (update.vcores, update.memory_mb) == (5, 10_000)


def test_an_unknown_nodemanager_is_reported_not_guessed_and_a_lost_one_not_written():
    result = plan([report("nm-x:1"), report("nm-a:8041", state="LOST")], {"nm-a:8041": "node-a"},
                  {"nm-x:1": (1, 1), "nm-a:8041": (1, 1)}, {}, {}, 0.0, RM, 0.0)
    assert result.unknown == ["nm-x:1"]
    assert result.updates == []
    assert [record["state"] for _, record in result.publish] == ["LOST"]


@pytest.mark.parametrize("payload, field", [
    ([], "expected an object with 'nodes'"),
    ({"nodes": 3}, "'nodes' is not a list"),
    ({"nodes": [{"id": "nohost"}]}, "nodes[].id"),
    ({"nodes": [{"id": "h:1", "usedVirtualCores": -1}]}, "nodes['h:1'].usedVirtualCores"),
    ({"nodes": {"node": [{"id": "h:1", "usedVirtualCores": 1, "usedMemoryMB": "x"}]}}, "usedMemoryMB"),
], ids=["not-an-object", "nodes-not-a-list", "id-without-port", "negative", "string-number"])
def test_garbage_from_the_resourcemanager_names_the_field(payload, field):
    with pytest.raises(ResourceManagerError, match=re.escape(field)):
        parse_nodes(payload)


def test_both_json_spellings_of_hadoop_are_read():
    documented = {"nodes": {"node": [{"id": "h:1", "state": "RUNNING", "usedVirtualCores": 1, "availableVirtualCores": 3,
                                      "usedMemoryMB": 512, "availMemoryMB": 1536, "numContainers": 1}]}}
    jackson = {"nodes": [{"nodeId": "h:1", "state": "RUNNING", "usedVirtualCores": 1, "availableVirtualCores": 3,
                          "usedMemory": 512, "availableMemory": 1536, "numContainers": 1}]}
    assert parse_nodes(documented) == parse_nodes(jackson) == [
        NodeManagerReport("h:1", "h", "RUNNING", 4, 2048, 1, 512, 1)]


def test_a_resourcemanager_that_is_down_is_an_error_not_a_crash():
    [port] = free_ports(1)
    with pytest.raises(ResourceManagerError, match="unreachable"):
        list_node_managers(f"http://127.0.0.1:{port}", timeout_s=2)


def test_a_resourcemanager_answering_html_is_an_error_naming_it():
    class Garbage(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>not yarn</html>")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(ResourceManagerError, match="answered no JSON"):
            list_node_managers(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()


def test_a_refused_update_is_a_dead_letter_with_yarns_message():
    from streams.schemas import codec
    from streams.yarn.sync import Update, refused

    record = refused(Update("nosuch:1", "node-a", 2, 2048), "Resource update get failed on all nodes due to change "
                     "resource on an unrecognized node: nosuch:1", RM, 5)
    assert (record["stage"], record["sourceTopic"], record["key"]) == ("yarn-bridge", RM, b"node-a")
    assert record["reason"] == ("UpdateNodeResource nosuch:1: Resource update get failed on all nodes due to change "
                                "resource on an unrecognized node: nosuch:1")
    codec.encode("DeadLetter", record)
