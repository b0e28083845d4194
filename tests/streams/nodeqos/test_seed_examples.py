"""The release articles' node-QoS examples end to end: the article's YAML (copied here, cited by article file)
goes through the real kind parsers (``streams.objects``), the ConfigMap through ``parse_slo_config``, the pods
through a binding SchedulingDecision into the node aggregate, and the Actuations it emits carry the values
Koordinator would write. ``streams/nodeqos/SEEDS.md`` maps every name to its test."""

from __future__ import annotations

import copy
import textwrap

import pytest

from streams import actuation
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.nodeqos.framework import CORE_SCHED_GROUP
from streams.objects import load_documents, to_record
from streams.objects.documents import Document
from streams.objects.podinfo import PodInfo, from_record
from streams.sloconfig.configmap import DEFAULT_CONFIG, SloConfig, parse_slo_config
from tests.streams.noderesource.support import G, event, metric_record, node_record, pod_usage
from tests.streams.nodeqos.seedpods import bound
from tests.streams.objects.seeds import seed_block

NODE = "seed-node"

CORE_SCHED_CONFIGMAP = """\
# Example of the slo-controller-config ConfigMap.
apiVersion: v1
kind: ConfigMap
metadata:
  name: slo-controller-config
  namespace: koordinator-system
data:
  resource-qos-config: |
    {
      "clusterStrategy": {
        "policies": {
          "cpuPolicy": "coreSched"
        },
        "lsClass": {
          "cpuQOS": {
            "enable": true,
            "coreExpeller": true,
            "schedIdle": 0
          }
        },
        "beClass": {
          "cpuQOS": {
            "enable": true,
            "coreExpeller": false,
            "schedIdle": 1
          }
        }
      }
    }
"""
"""004_25ff6e46be025628.txt, "Next-Gen CPU QoS Policy" (fixture ``004-04``)."""

NETWORK_QOS_DATA = """\
# unit: bps
resource-qos-config: |
  {
    "clusterStrategy": {
      "policies": {"netQOSPolicy":"terway-qos"},
      "lsClass": {
        "networkQOS": {
          "enable": true,
          "ingressRequest": "50M",
          "ingressLimit": "100M",
          "egressRequest": "50M",
          "egressLimit": "100M"
        }
      },
      "beClass": {
        "networkQOS": {
          "enable": true,
          "ingressRequest": "10M",
          "ingressLimit": "200M",
          "egressRequest": "10M",
          "egressLimit": "200M"
        }
      }
    }
  }
system-config: |-
  {
    "clusterStrategy": {
      "totalNetworkBandwidth": "600M"
    }
  }
"""
"""004_25ff6e46be025628.txt, "Terway Net QoS" (fixture ``004-03``): the ConfigMap's data keys only."""

NETWORK_QOS_ANNOTATION = """'{"IngressLimit": "10M", "EgressLimit": "20M"}'"""
"""004_25ff6e46be025628.txt, "Terway Net QoS": the value column of the ``koordinator.sh/networkQOS`` row."""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  uid: {uid}
  labels: {labels}
  annotations: {annotations}
spec:
  containers:
  - name: app
    image: busybox
    resources:
      requests:
        cpu: '1'
        memory: 1Gi
"""
"""A pod carrying the labels and annotations an article gives in a table rather than in a pod manifest."""


def parse_one(text: str):
    [doc] = load_documents("-", stdin_text=text)
    return doc, to_record(doc)


def slo_config(text: str) -> SloConfig:
    """The ConfigMap YAML through the ConfigMap kind and ``parse_slo_config``."""
    _, record = parse_one(text)
    return parse_slo_config(record.record, DEFAULT_CONFIG)


def configmap_of(data: str) -> str:
    """slo-controller-config around data keys given as an article shows them."""
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slo-controller-config\n"
            "  namespace: koordinator-system\ndata:\n" + textwrap.indent(data, "  "))


def pod(name: str, uid: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        manifest: str | None = None) -> PodInfo:
    """A Pod record through the Pod kind, then the scheduler's PodInfo (as ``seedpods.seed_pod``); ``manifest``
    is an article's pod YAML, named here (the articles leave the name and UID out)."""
    if manifest is None:
        manifest = POD.format(name=name, uid=uid, labels=_flow(labels), annotations=_flow(annotations))
    doc, _ = parse_one(manifest)
    body = copy.deepcopy(doc.body)
    body.setdefault("metadata", {}).update(name=name, namespace="default", uid=uid)
    record = to_record(Document(doc.file, doc.index, doc.line, body))
    return from_record(record.key, record.record)


def _flow(values: dict[str, str] | None) -> str:
    """A YAML flow mapping whose values are single-quoted scalars (or taken as written when already quoted)."""
    items = (f"{key}: {value if value.startswith(chr(39)) else repr(value)}" for key, value in (values or {}).items())
    return "{" + ", ".join(items) + "}"


def plan(config: SloConfig, *pods: PodInfo, node_annotations: dict | None = None) -> list[dict]:
    """Node, bound pods and one NodeMetric reporting them running through ``node.handle``: the Actuations
    emitted."""
    events = [event("Node", NODE, node_record(NODE, cpu=16_000, memory=64 * G, annotations=node_annotations)),
              *(bound(p, NODE) for p in pods),
              event("NodeMetric", NODE, metric_record(NODE, node_usage={"cpu": 2000, "memory": 8 * G},
                                                      pods=[pod_usage(p.namespace, p.name, 100, G) for p in pods]))]
    state, actuations = aggregate.initial_state(), []
    for ev in events:
        state, out = aggregate.handle(state, ev, config, DEFAULT_SETTINGS)
        actuations.extend(record for schema, record in out if schema == "Actuation")
    return actuations


def values(actuations: list[dict], kind: str, target: str, mechanism: str) -> dict[str, str] | None:
    found = [r["values"] for r in actuations
             if (r["targetKind"], r["targetId"], r["mechanism"]) == (kind, target, mechanism)]
    return found[-1] if found else None


@pytest.mark.parametrize("seed, number, text", [
    pytest.param("004", 4, CORE_SCHED_CONFIGMAP, id="004-core-sched-configmap"),
    pytest.param("004", 3, NETWORK_QOS_DATA, id="004-network-qos-data"),
])
def test_the_snippets_here_are_the_articles(seed, number, text):
    assert text == seed_block(seed, number).text


@pytest.mark.parametrize("group_label", [
    pytest.param("koordinator.sh/coreSchedulingGroup", id="article-label"),
    pytest.param("koordinator.sh/core-sched-group-id", id="source-label"),
])
def test_v15_core_scheduling_and_cgroup_idle(group_label):
    """004_25ff6e46be025628.txt, "Core Scheduling": ``cpuPolicy: coreSched``, LS ``coreExpeller``, BE
    ``schedIdle: 1``, and the pod label ``koordinator.sh/coreSchedulingGroup: "xxx-group"`` (Koordinator's source
    reads ``core-sched-group-id``; both work). BE's besteffort dir gets ``cpu.idle = 1``; the LS pod takes its
    group's cookie with the expeller suffix; the BE pod the default group "" (enabled, not expeller); group
    identity is off under coreSched, so no ``cpu.bvt_warp_ns`` is written."""
    config = slo_config(CORE_SCHED_CONFIGMAP)
    ls = pod("ls-app", "uid-ls", {"koordinator.sh/qosClass": "LS", group_label: "xxx-group"})
    be = pod("be-job", "uid-be", {"koordinator.sh/qosClass": "BE"})
    out = plan(config, ls, be)
    assert values(out, "qos", "BE", "cgroup") == {actuation.CPU_IDLE: "1"}
    assert values(out, "pod", "uid-ls", "cgroup") == {CORE_SCHED_GROUP: "xxx-group-expeller"}
    assert values(out, "pod", "uid-be", "cgroup") == {CORE_SCHED_GROUP: ""}


def test_v15_source_core_sched_label_wins_over_the_articles():
    """004_25ff6e46be025628.txt: a pod carrying both group labels takes ``core-sched-group-id``'s group."""
    both = pod("ls-app", "uid-ls", {"koordinator.sh/qosClass": "LS", "koordinator.sh/coreSchedulingGroup": "article",
                                    "koordinator.sh/core-sched-group-id": "source"})
    assert values(plan(slo_config(CORE_SCHED_CONFIGMAP), both), "pod", "uid-ls", "cgroup") == {
        CORE_SCHED_GROUP: "source-expeller"}


def test_v15_terway_network_qos_node_classes():
    """004_25ff6e46be025628.txt, "Terway Net QoS": ``netQOSPolicy: terway-qos``, LS -> L1 and BE -> L2 with the
    article's bandwidths (bits/s; tc shapes egress, so the class settings are the egress ones) under
    ``totalNetworkBandwidth: 600M``."""
    out = plan(slo_config(configmap_of(NETWORK_QOS_DATA)))
    assert values(out, "node", NODE, "tc") == {
        actuation.TOTAL_BPS: "600000000", "L1.request_bps": "50000000", "L1.limit_bps": "100000000",
        "L2.request_bps": "10000000", "L2.limit_bps": "200000000"}


@pytest.mark.parametrize("annotation", [
    pytest.param(NETWORK_QOS_ANNOTATION, id="article-IngressLimit"),
    pytest.param("""'{"ingressLimit": "10M", "egressLimit": "20M"}'""", id="source-ingressLimit"),
])
@pytest.mark.parametrize("qos, priority", [
    pytest.param("SYSTEM", "0", id="SYSTEM-L0"),
    pytest.param("LSE", "1", id="LSE-L1"),
    pytest.param("LSR", "1", id="LSR-L1"),
    pytest.param("LS", "1", id="LS-L1"),
    pytest.param("BE", "2", id="BE-L2"),
])
def test_v15_pod_bandwidth_annotation_and_class_priority(annotation, qos, priority):
    """004_25ff6e46be025628.txt, "Terway Net QoS": the annotation ``koordinator.sh/networkQOS`` as the article's
    table writes it (``IngressLimit``; Go's JSON decoder matches keys case-insensitively, so the source's
    ``ingressLimit`` is the same) limits the pod; its priority follows the article's table (SYSTEM L0; LSE, LSR,
    LS L1; BE L2)."""
    tagged = pod("app", "uid-app", {"koordinator.sh/qosClass": qos}, {"koordinator.sh/networkQOS": annotation})
    out = plan(slo_config(configmap_of(NETWORK_QOS_DATA)), tagged)
    assert values(out, "pod", "uid-app", "tc") == {
        actuation.NET_PRIORITY: priority, actuation.NET_INGRESS_LIMIT: "10000000",
        actuation.NET_EGRESS_LIMIT: "20000000"}


HOST_APPLICATIONS = """\
resource-qos-config: |
  {"clusterStrategy": {"lsClass": {"cpuQOS": {"enable": true, "groupIdentity": 2}},
                       "beClass": {"cpuQOS": {"enable": true, "groupIdentity": -1}}}}
host-application-config: |
  {"applications": [
    {"name": "nginx", "qos": "LS",
     "cgroupPath": {"base": "CgroupRoot", "parentDir": "host-latency-sensitive/", "relativePath": "nginx/"}},
    {"name": "log-shipper", "qos": "BE"}]}
"""
"""The v1.4 articles show no YAML for host applications; this is Koordinator's ``host-application-config``
with the two classes they describe."""


def test_v14_host_applications_get_group_identity_and_ls_the_share_pool():
    """000_238dda80a4b0d017.txt / 002_401beb9eff584c17.txt, "QoS management for non-containerized applications":
    an LS application gets the group identity of ``resource-qos-config`` and every CPU of the share pool, a BE
    one its group identity. The node reserves CPUs 0-1, so the pool is 2-15."""
    out = plan(slo_config(configmap_of(HOST_APPLICATIONS)),
               node_annotations={"node.koordinator.sh/reservation": '{"reservedCPUs": "0-1"}'})
    assert values(out, "hostapp", "nginx", "cgroup") == {
        actuation.HOSTAPP_PATH: "host-latency-sensitive/nginx", actuation.CPUSET_CPUS: "2-15",
        actuation.CPU_BVT_WARP: "2"}
    assert values(out, "hostapp", "log-shipper", "cgroup") == {
        actuation.HOSTAPP_PATH: "host-best-effort/log-shipper", actuation.CPU_BVT_WARP: "-1"}
