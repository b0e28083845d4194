"""InterPodAffinity PreFilter and Filter: kube-scheduler v1.34's tables (``interpodaffinity/filtering_test.go``:
``TestRequiredAffinitySingleNode``, ``TestRequiredAffinityMultipleNodes``, ``TestPreFilterStateAddRemovePod``,
``TestGetTPMapMatchingIncomingAffinityAntiAffinity``), with their Go names as ids."""

import dataclasses

import pytest

from streams.scheduler.framework import Code, CycleState
from streams.scheduler.plugins.interpodaffinity import NAME
from tests.streams.scheduler.plugins.interpodaffinity.wrappers import (
    AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY, REQUIRED, SKIP, MakePod, affinity, cluster, expr, incoming,
    make_pod, run_filter, term, with_affinity_terms)
from tests.streams.scheduler.support import plugin_of

BAD_VALUE = ('parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid label '
             "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
             "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
             "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    pod: dict
    pods: tuple = ()
    nodes: tuple = ()
    want_prefilter: tuple | None = None
    """(code, message) of a PreFilter that does not pass."""
    want: tuple = ()
    """Per node: None (passes) or (code, reason)."""


POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = (("node1", {"region": "r1", "zone": "z11"}),)
EXISTING = MakePod().labels(POD_LABEL).node("node1").obj()
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}
SCAN = expr("service", "In", "securityscan", "value2")

SINGLE_NODE = [
    Case("A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
         MakePod().obj(), want_prefilter=SKIP),
    Case("satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches "
         "the existing pod",
         MakePod().labels(POD_LABEL2).pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED).obj(),
         (EXISTING,), want=(None,)),
    Case("satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator "
         "in labelSelector that matches the existing pod",
         MakePod().labels(POD_LABEL2).pod_affinity_not_in("service", "region", ["securityscan3", "value3"], REQUIRED)
         .obj(), (EXISTING,), want=(None,)),
    Case("Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
         with_affinity_terms("", POD_LABEL2, [term(SCAN, topology="", namespaces=["DiffNameSpace"])], None),
         (MakePod().namespace("ns").label("service", "securityscan").node("node1").obj(),), want=(AFFINITY,)),
    Case("Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
         MakePod().labels(POD_LABEL).pod_affinity_in("service", "", ["antivirusscan", "value2"], REQUIRED).obj(),
         (EXISTING,), want=(AFFINITY,)),
    Case("satisfies the PodAffinity with different label Operators in multiple "
         "RequiredDuringSchedulingIgnoredDuringExecution ",
         with_affinity_terms("", POD_LABEL2, [
             term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"), topology="region"),
             term(expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue"), topology="region")],
             None), (EXISTING,), want=(None,)),
    Case("The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node "
         "because one of the matchExpression item don't match.",
         with_affinity_terms("", POD_LABEL2, [
             term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"), topology="region"),
             term(expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue"), topology="region")],
             None), (EXISTING,), want=(AFFINITY,)),
    Case("satisfies the PodAffinity and PodAntiAffinity with the existing pod",
         MakePod().labels(POD_LABEL2).pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
         .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED).obj(),
         (EXISTING,), want=(None,)),
    Case("satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
         MakePod().labels(POD_LABEL2).pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
         .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED).obj(),
         (MakePod().node("node1").labels(POD_LABEL)
          .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED).obj(),), want=(None,)),
    Case("satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
         MakePod().labels(POD_LABEL2).pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
         .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"], REQUIRED).obj(),
         (EXISTING,), want=(ANTI_AFFINITY,)),
    Case("satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing "
         "pod",
         MakePod().labels(POD_LABEL).pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED)
         .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED).obj(),
         (MakePod().labels(POD_LABEL).node("node1")
          .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"], REQUIRED).obj(),),
         want=(EXISTING_ANTI_AFFINITY,)),
    Case("pod matches its own Label in PodAffinity and that matches the existing pod Labels",
         MakePod().labels(POD_LABEL).pod_affinity_not_in("service", "region", ["securityscan", "value2"], REQUIRED)
         .obj(), (MakePod().label("service", "securityscan").node("node2").obj(),), want=(AFFINITY,)),
    Case("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't "
         "satisfy PodAntiAffinity symmetry with the existing pod",
         MakePod().labels(POD_LABEL).obj(),
         (MakePod().node("node1").labels(POD_LABEL)
          .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"], REQUIRED).obj(),),
         want=(EXISTING_ANTI_AFFINITY,)),
    Case("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy "
         "PodAntiAffinity symmetry with the existing pod",
         MakePod().labels(POD_LABEL).obj(),
         (MakePod().node("node1").labels(POD_LABEL)
          .pod_anti_affinity_not_in("service", "zone", ["securityscan", "value2"], REQUIRED).obj(),),
         want_prefilter=SKIP),
    Case("satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming "
         "pod",
         MakePod().labels(POD_LABEL).pod_anti_affinity_exists("service", "region", REQUIRED)
         .pod_anti_affinity_exists("security", "region", REQUIRED).obj(),
         (MakePod().node("node1").labels(POD_LABEL2).pod_anti_affinity_exists("security", "zone", REQUIRED).obj(),),
         want=(ANTI_AFFINITY,)),
    Case("PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
         MakePod().labels(POD_LABEL).pod_anti_affinity_exists("service", "zone", REQUIRED)
         .pod_anti_affinity_exists("security", "zone", REQUIRED).obj(),
         (MakePod().node("node1").labels(POD_LABEL2).pod_anti_affinity_exists("security", "zone", REQUIRED).obj(),),
         want=(ANTI_AFFINITY,)),
    Case("PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
         MakePod().labels(POD_LABEL2).pod_anti_affinity_exists("security", "zone", REQUIRED).obj(),
         (MakePod().node("node1").labels(POD_LABEL).pod_anti_affinity_exists("service", "zone", REQUIRED)
          .pod_anti_affinity_exists("security", "zone", REQUIRED).obj(),), want=(EXISTING_ANTI_AFFINITY,)),
    Case("PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
         MakePod().labels({"abc": "", "xyz": ""}).pod_anti_affinity_exists("abc", "zone", REQUIRED)
         .pod_anti_affinity_exists("def", "zone", REQUIRED).obj(),
         (MakePod().node("node1").labels({"def": "", "xyz": ""}).pod_anti_affinity_exists("abc", "zone", REQUIRED)
          .pod_anti_affinity_exists("def", "zone", REQUIRED).obj(),), want=(ANTI_AFFINITY,)),
    Case("PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
         MakePod().labels({"def": "", "xyz": ""}).pod_anti_affinity_exists("abc", "zone", REQUIRED)
         .pod_anti_affinity_exists("def", "zone", REQUIRED).obj(),
         (MakePod().node("node1").labels({"abc": "", "xyz": ""}).pod_anti_affinity_exists("abc", "zone", REQUIRED)
          .pod_anti_affinity_exists("def", "zone", REQUIRED).obj(),), want=(ANTI_AFFINITY,)),
    Case("PodAffinity fails PreFilter with an invalid affinity label syntax",
         MakePod().labels(POD_LABEL).pod_affinity_in("service", "region", ["{{.bad-value.}}"], REQUIRED)
         .pod_affinity_in("service", "node", ["antivirusscan", "value2"], REQUIRED).obj(),
         want_prefilter=(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, BAD_VALUE)),
    Case("PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
         MakePod().labels(POD_LABEL).pod_affinity_in("service", "region", ["foo"], REQUIRED)
         .pod_affinity_in("service", "node", ["{{.bad-value.}}"], REQUIRED).obj(),
         want_prefilter=(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, BAD_VALUE)),
    Case("affinity with NamespaceSelector",
         with_affinity_terms("", POD_LABEL2, [term(SCAN, topology="region", namespace_selector=TEAM1)], None),
         (make_pod("subteam1.team1", POD_LABEL, "node1"),), want=(None,)),
    Case("affinity with non-matching NamespaceSelector",
         with_affinity_terms("", POD_LABEL2, [term(SCAN, topology="region", namespace_selector=TEAM1)], None),
         (make_pod("subteam1.team2", POD_LABEL, "node1"),), want=(AFFINITY,)),
    Case("anti-affinity with matching NamespaceSelector",
         with_affinity_terms("subteam1.team1", POD_LABEL2, None,
                             [term(SCAN, topology="zone", namespace_selector=TEAM1)]),
         (make_pod("subteam2.team1", POD_LABEL, "node1"),), want=(ANTI_AFFINITY,)),
    Case("anti-affinity with matching all NamespaceSelector",
         with_affinity_terms("subteam1.team1", POD_LABEL2, None, [term(SCAN, topology="zone", namespace_selector={})]),
         (make_pod("subteam2.team1", POD_LABEL, "node1"),), want=(ANTI_AFFINITY,)),
    Case("anti-affinity with non-matching NamespaceSelector",
         with_affinity_terms("subteam1.team1", POD_LABEL2, None,
                             [term(SCAN, topology="zone", namespace_selector=TEAM1)]),
         (make_pod("subteam1.team2", POD_LABEL, "node1"),), want=(None,)),
]

CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}


def abc_nodes(*zones: str) -> tuple:
    return tuple((f"node{name}", {"region": "r1", "zone": zone, "hostname": f"node{name}"})
                 for name, zone in zip("ABC", zones))


MULTIPLE_NODES = [
    Case("A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has "
         "an existing pod that matches the affinity rules",
         MakePod().pod_affinity_in("foo", "region", ["bar"], REQUIRED).obj(),
         (MakePod().name("p1").node("node1").labels({"foo": "bar"}).obj(),),
         (("node1", CHINA), ("node2", CHINA_AZ1), ("node3", INDIA)), want=(None, None, AFFINITY)),
    Case("The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the "
         "collection should not be blocked from being scheduled onto any node, even there's no existing pod that "
         "matches the rule anywhere.",
         MakePod().labels({"foo": "bar", "service": "securityscan"}).pod_affinity_in("foo", "zone", ["bar"], REQUIRED)
         .pod_affinity_in("service", "zone", ["securityscan"], REQUIRED).obj(),
         (MakePod().name("p1").node("nodeA").labels({"foo": "bar"}).obj(),),
         (("nodeA", {"zone": "az1", "hostname": "h1"}), ("nodeB", {"zone": "az2", "hostname": "h2"})),
         want=(None, None)),
    Case("The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
         MakePod().labels({"foo": "bar", "service": "securityscan"}).pod_affinity_in("foo", "zone", ["bar"], REQUIRED)
         .pod_affinity_in("service", "zone", ["securityscan"], REQUIRED).obj(),
         (MakePod().name("p1").node("nodeA").labels({"foo": "bar"}).obj(),),
         (("nodeA", {"zoneLabel": "az1", "hostname": "h1"}), ("nodeB", {"zoneLabel": "az2", "hostname": "h2"})),
         want=(AFFINITY, AFFINITY)),
    Case("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
         "affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
         MakePod().pod_anti_affinity_in("foo", "region", ["abc"], REQUIRED).obj(),
         (MakePod().node("nodeA").labels({"foo": "abc"}).obj(),),
         (("nodeA", {"region": "r1", "hostname": "nodeA"}), ("nodeB", {"region": "r1", "hostname": "nodeB"})),
         want=(ANTI_AFFINITY, ANTI_AFFINITY)),
    Case("This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
         MakePod().pod_anti_affinity_in("foo", "region", ["abc"], REQUIRED)
         .pod_anti_affinity_in("service", "zone", ["securityscan"], REQUIRED).obj(),
         (MakePod().node("nodeA").labels({"foo": "abc", "service": "securityscan"}).obj(),),
         abc_nodes("z1", "z2")[:2], want=(ANTI_AFFINITY, ANTI_AFFINITY)),
    Case("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
         "affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
         MakePod().pod_anti_affinity_in("foo", "region", ["abc"], REQUIRED).obj(),
         (MakePod().node("nodeA").labels({"foo": "abc"}).obj(),),
         (("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA)), want=(ANTI_AFFINITY, ANTI_AFFINITY, None)),
    Case("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
         "affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an "
         "existing pod that match the inter pod affinity rule but in different namespace)",
         MakePod().namespace("NS1").labels({"foo": "123"}).pod_anti_affinity_in("foo", "region", ["bar"], REQUIRED)
         .obj(),
         (MakePod().node("nodeA").namespace("NS1").labels({"foo": "bar"}).obj(),
          MakePod().node("nodeC").namespace("NS2").pod_anti_affinity_in("foo", "region", ["123"], REQUIRED).obj()),
         (("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA)), want=(ANTI_AFFINITY, ANTI_AFFINITY, None)),
    Case("Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of "
         "the term is firstly checked, and then topologyKey of the term is also checked",
         MakePod().label("foo", "").obj(),
         (MakePod().node("nodeA").pod_anti_affinity_exists("foo", "invalid-node-label", REQUIRED).obj(),),
         abc_nodes("z1", "z1")[:2], want_prefilter=SKIP),
    Case("Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
         MakePod().node("nodeA").pod_anti_affinity_exists("foo", "invalid-node-label", REQUIRED).obj(),
         (MakePod().node("nodeA").labels({"foo": ""}).obj(),), abc_nodes("z1", "z1")[:2], want=(None, None)),
    Case("Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
         "existingPod's terms on all nodes",
         MakePod().label("foo", "").label("bar", "").obj(),
         (MakePod().node("nodeA").pod_anti_affinity_exists("foo", "zone", REQUIRED).obj(),
          MakePod().node("nodeA").pod_anti_affinity_exists("bar", "region", REQUIRED).obj()),
         abc_nodes("z1", "z2")[:2], want=(EXISTING_ANTI_AFFINITY, EXISTING_ANTI_AFFINITY)),
    Case("Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
         "anti-affinity rule of existingPod",
         MakePod().pod_anti_affinity_exists("foo", "zone", REQUIRED).pod_anti_affinity_exists("bar", "region", REQUIRED)
         .obj(),
         (MakePod().node("nodeA").labels({"foo": ""}).obj(), MakePod().node("nodeB").labels({"bar": ""}).obj()),
         abc_nodes("z1", "z2")[:2], want=(ANTI_AFFINITY, ANTI_AFFINITY)),
    Case("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
         "single term match - case when one term has invalid topologyKey",
         MakePod().label("foo", "").label("bar", "").obj(),
         (MakePod().node("nodeA").pod_anti_affinity_exists("foo", "invalid-node-label", REQUIRED)
          .pod_anti_affinity_exists("bar", "zone", REQUIRED).obj(),),
         abc_nodes("z1", "z2")[:2], want=(EXISTING_ANTI_AFFINITY, None)),
    Case("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
         "single term match - case when one term has invalid topologyKey",
         MakePod().pod_anti_affinity_exists("foo", "invalid-node-label", REQUIRED)
         .pod_anti_affinity_exists("bar", "zone", REQUIRED).obj(),
         (MakePod().name("podA").node("nodeA").labels({"foo": "", "bar": ""}).obj(),),
         abc_nodes("z1", "z2")[:2], want=(ANTI_AFFINITY, None)),
    Case("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
         "single term match - case when all terms have valid topologyKey",
         MakePod().label("foo", "").label("bar", "").obj(),
         (MakePod().node("nodeA").pod_anti_affinity_exists("foo", "region", REQUIRED)
          .pod_anti_affinity_exists("bar", "zone", REQUIRED).obj(),),
         abc_nodes("z1", "z2")[:2], want=(EXISTING_ANTI_AFFINITY, EXISTING_ANTI_AFFINITY)),
    Case("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
         "single term match - case when all terms have valid topologyKey",
         MakePod().pod_anti_affinity_exists("foo", "region", REQUIRED).pod_anti_affinity_exists("bar", "zone", REQUIRED)
         .obj(),
         (MakePod().node("nodeA").labels({"foo": "", "bar": ""}).obj(),),
         abc_nodes("z1", "z2")[:2], want=(ANTI_AFFINITY, ANTI_AFFINITY)),
    Case("Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term "
         "matches incoming pod, so incoming pod can only be scheduled to nodeC",
         MakePod().label("foo", "").label("bar", "").obj(),
         (MakePod().node("nodeA").pod_anti_affinity_exists("foo", "zone", REQUIRED)
          .pod_anti_affinity_exists("labelA", "zone", REQUIRED).obj(),
          MakePod().node("nodeB").pod_anti_affinity_exists("bar", "zone", REQUIRED)
          .pod_anti_affinity_exists("labelB", "zone", REQUIRED).obj()),
         abc_nodes("z1", "z2", "z3"), want=(EXISTING_ANTI_AFFINITY, EXISTING_ANTI_AFFINITY, None)),
    Case("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
         "match",
         MakePod().pod_affinity_exists("foo", "region", REQUIRED).pod_affinity_exists("bar", "zone", REQUIRED).obj(),
         (MakePod().name("pod1").labels({"foo": "", "bar": ""}).node("nodeA").obj(),),
         abc_nodes("z1", "z1")[:2], want=(None, None)),
    Case("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
         "match, and the match logic should be satisfied on the same pod",
         MakePod().pod_affinity_exists("foo", "region", REQUIRED).pod_affinity_exists("bar", "zone", REQUIRED).obj(),
         (MakePod().node("nodeA").name("pod1").labels({"foo": ""}).obj(),
          MakePod().node("nodeB").name("pod2").labels({"bar": ""}).obj()),
         abc_nodes("z1", "z2")[:2], want=(AFFINITY, AFFINITY)),
]


def check(case: Case) -> None:
    outcome = run_filter(cluster(list(case.nodes), list(case.pods)), case.pod)
    if case.want_prefilter is not None:
        assert outcome.prefilter == case.want_prefilter
    else:
        assert outcome.prefilter == (Code.SUCCESS, "")
        assert outcome.nodes == case.want


@pytest.mark.parametrize("case", [dataclasses.replace(c, nodes=c.nodes or NODE1) for c in SINGLE_NODE],
                         ids=[c.name for c in SINGLE_NODE])
def test_required_affinity_single_node(case):
    """TestRequiredAffinitySingleNode."""
    check(case)


@pytest.mark.parametrize("case", MULTIPLE_NODES, ids=[c.name for c in MULTIPLE_NODES])
def test_required_affinity_multiple_nodes(case):
    """TestRequiredAffinityMultipleNodes."""
    check(case)


SELECTOR1 = {"foo": "bar"}
ANTI_FOO_BAR = [term(expr("foo", "In", "bar"), topology="region")]
COMPLEX = [term(expr("foo", "In", "bar", "buzz"), topology="region"),
           term(expr("service", "NotIn", "bar", "security", "test"), topology="zone")]
ADD_REMOVE_NODES = (("nodeA", {"region": "r1", "zone": "z11"}), ("nodeB", {"region": "r1", "zone": "z12"}),
                    ("nodeC", {"region": "r2", "zone": "z21"}))


@dataclasses.dataclass(frozen=True)
class AddRemoveCase:
    name: str
    pending: dict
    existing: tuple
    added: dict
    want_anti: dict
    want_affinity: dict


ADD_REMOVE = [
    AddRemoveCase("preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
                  MakePod().name("pending").labels(SELECTOR1).affinity(affinity(anti_required=ANTI_FOO_BAR)).obj(),
                  (MakePod().name("p1").labels(SELECTOR1).node("nodeA").obj(),
                   MakePod().name("p2").node("nodeC").affinity(affinity(anti_required=ANTI_FOO_BAR)).obj()),
                  MakePod().name("addedPod").labels(SELECTOR1).node("nodeB")
                  .affinity(affinity(anti_required=ANTI_FOO_BAR)).obj(),
                  {("region", "r1"): 2}, {}),
    AddRemoveCase("preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
                  MakePod().name("pending").labels(SELECTOR1).affinity(affinity(anti_required=COMPLEX)).obj(),
                  (MakePod().name("p1").labels(SELECTOR1).node("nodeA").obj(),
                   MakePod().name("p2").node("nodeC").affinity(affinity(anti_required=ANTI_FOO_BAR)).obj()),
                  MakePod().name("addedPod").labels(SELECTOR1).node("nodeA")
                  .affinity(affinity(anti_required=COMPLEX)).obj(),
                  {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}, {}),
    AddRemoveCase("preFilterState matching pod affinity and anti-affinity are updated correctly after adding and "
                  "removing a pod",
                  MakePod().name("pending").labels(SELECTOR1).affinity(affinity(required=COMPLEX)).obj(),
                  (MakePod().name("p1").labels(SELECTOR1).node("nodeA").obj(),
                   MakePod().name("p2").node("nodeC")
                   .affinity(affinity(required=COMPLEX, anti_required=ANTI_FOO_BAR)).obj()),
                  MakePod().name("addedPod").labels(SELECTOR1).node("nodeA")
                  .affinity(affinity(anti_required=COMPLEX)).obj(),
                  {}, {("region", "r1"): 2, ("zone", "z11"): 2}),
]


def prefilter_state(domain, body):
    plugin = plugin_of(domain, NAME)
    state = CycleState()
    assert plugin.pre_filter(state, incoming(body)).code == Code.SUCCESS
    return plugin, state[NAME]


def counts(state) -> tuple:
    return state.existing_anti, state.affinity, state.anti


@pytest.mark.parametrize("case", ADD_REMOVE, ids=[c.name for c in ADD_REMOVE])
def test_pre_filter_state_add_remove_pod(case):
    """TestPreFilterStateAddRemovePod: AddPod gives the state of PreFilter with the pod there; RemovePod undoes it."""
    _, all_pods = prefilter_state(cluster(list(ADD_REMOVE_NODES), [*case.existing, case.added]), case.pending)
    domain = cluster(list(ADD_REMOVE_NODES), list(case.existing))
    plugin, state = prefilter_state(domain, case.pending)
    original = counts(state.copy())
    added = incoming(case.added)
    labels = domain.cluster.nodes[added.node_name].labels
    state.update_with_pod(added, plugin.index.terms_of(added), labels, 1, plugin.namespace_labels)
    assert (state.anti, state.affinity) == (case.want_anti, case.want_affinity)
    assert counts(state) == counts(all_pods)
    state.update_with_pod(added, plugin.index.terms_of(added), labels, -1, plugin.namespace_labels)
    assert counts(state) == original


def normal(*label_keys: str) -> dict:
    return MakePod().name("normal").node("nodeA").labels({key: "" for key in label_keys}).obj()


def incoming_pod(name: str, affinity_keys: tuple = (), anti_keys: tuple = ()) -> dict:
    pod = MakePod().name(name)
    for key in affinity_keys:
        pod.pod_affinity_exists(key, "hostname", REQUIRED)
    for key in anti_keys:
        pod.pod_anti_affinity_exists(key, "hostname", REQUIRED)
    return pod.obj()


NODE_A = {("hostname", "nodeA"): 1}
INCOMING_COUNTS = [
    ("nil test", (), incoming_pod("aaa-normal"), {}, {}),
    ("incoming pod without affinity/anti-affinity causes a no-op", (normal("aaa"),), incoming_pod("aaa-normal"),
     {}, {}),
    ("no pod has label that violates incoming pod's affinity and anti-affinity", (normal("bbb"),),
     incoming_pod("aaa-anti", ("aaa",), ("aaa",)), {}, {}),
    ("existing pod matches incoming pod's affinity and anti-affinity - single term case", (normal("aaa"),),
     incoming_pod("affi-antiaffi", ("aaa",), ("aaa",)), NODE_A, NODE_A),
    ("existing pod matches incoming pod's affinity and anti-affinity - multiple terms case", (normal("aaa", "bbb"),),
     incoming_pod("affi-antiaffi", ("aaa", "bbb"), ("aaa",)), {("hostname", "nodeA"): 2}, NODE_A),
    ("existing pod not match incoming pod's affinity but matches anti-affinity", (normal("aaa"),),
     incoming_pod("affi-antiaffi", ("aaa", "bbb"), ("aaa", "bbb")), {}, NODE_A),
    ("incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
     (normal("aaa", "bbb"),), incoming_pod("anaffi-antiaffiti", ("aaa", "ccc"), ("aaa", "ccc")), {}, NODE_A),
    ("incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
     (normal("bbb"),), incoming_pod("affi-antiaffi", ("aaa", "bbb"), ("aaa", "bbb")), {}, NODE_A),
]


@pytest.mark.parametrize("existing, pod, want_affinity, want_anti", [case[1:] for case in INCOMING_COUNTS],
                         ids=[case[0] for case in INCOMING_COUNTS])
def test_get_tp_map_matching_incoming_affinity_anti_affinity(existing, pod, want_affinity, want_anti):
    """TestGetTPMapMatchingIncomingAffinityAntiAffinity: PreFilter's counts for the incoming pod's terms."""
    domain = cluster([("nodeA", {"hostname": "nodeA"})], list(existing))
    plugin = plugin_of(domain, NAME)
    state = CycleState()
    plugin.pre_filter(state, incoming(pod))
    got = (state[NAME].affinity, state[NAME].anti) if NAME in state else ({}, {})
    assert got == (want_affinity, want_anti)
