"""KubeSchedulerConfiguration: merging into the default profile, strict args, and applying it from the inbox."""

import pytest

from streams.scheduler import config
from streams.scheduler.domain import SchedulingDomain
from tests.streams.scheduler.support import T0, decisions, deleted, node, pod, run, scheduler_config, tick


def profile(plugins=None, plugin_config=None, name="koord-scheduler"):
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": name, "plugins": plugins or {}, "pluginConfig": plugin_config or []}]}


def points(document):
    parsed = config.parse(document).profiles[0]
    return {point: list(names) for point, names in parsed.points.items() if names}, dict(parsed.weights)


K = ["TaintToleration", "NodeAffinity"]
KW = {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2}
"""The kube-scheduler score plugins before NodeResourcesFit in the default profile, and their weights."""
B = {"NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}


def test_default_profile():
    assert points(profile(name="default-scheduler")) == ({
        "preEnqueue": ["SchedulingGates", "Coscheduling"],
        "preFilter": ["NodeAffinity", "NodePorts", "Reservation", "NodeResourcesFit", "VolumeRestrictions",
                      "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity",
                      "LoadAwareScheduling", "NodeNUMAResource", "DeviceShare", "ElasticQuota"],
        "filter": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "Reservation",
                   "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                   "PodTopologySpread", "InterPodAffinity", "LoadAwareScheduling", "NodeNUMAResource", "DeviceShare"],
        "postFilter": ["Coscheduling", "ElasticQuota", "DefaultPreemption"],
        "score": [*K, "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality", "LoadAwareScheduling", "NodeNUMAResource",
                  "DeviceShare", "Reservation"],
        "reserve": ["LoadAwareScheduling", "ElasticQuota", "NodeNUMAResource", "DeviceShare", "Coscheduling"],
        "permit": ["Coscheduling"],
        "preBind": ["VolumeBinding", "Reservation", "NodeNUMAResource", "DeviceShare"],
    }, {**KW, "NodeResourcesFit": 1, "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1, "LoadAwareScheduling": 1, "NodeNUMAResource": 1, "DeviceShare": 1, "Reservation": 5000})


D = {"NodeNUMAResource": 1, "DeviceShare": 1, "InterPodAffinity": 2}


@pytest.mark.parametrize("plugins, score, weights", [
    ({"score": {"enabled": [{"name": "NodeResourcesFitPlus", "weight": 2}]}},
     [*K, "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality", "LoadAwareScheduling", "NodeNUMAResource",
      "DeviceShare", "Reservation", "NodeResourcesFitPlus"],
     {**KW, "NodeResourcesFit": 1, **B, "LoadAwareScheduling": 1, **D, "Reservation": 5000, "NodeResourcesFitPlus": 2}),
    ({"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "ScarceResourceAvoidance"}]}},
     ["ScarceResourceAvoidance"], {"ScarceResourceAvoidance": 1}),
    ({"score": {"disabled": [{"name": "LoadAwareScheduling"}]}},
     [*K, "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality", "NodeNUMAResource", "DeviceShare", "Reservation"],
     {**KW, "NodeResourcesFit": 1, **B, **D, "Reservation": 5000}),
    ({"score": {"enabled": [{"name": "LoadAwareScheduling", "weight": 5}]}},
     [*K, "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality", "LoadAwareScheduling", "NodeNUMAResource",
      "DeviceShare", "Reservation"],
     {**KW, "NodeResourcesFit": 1, **B, "LoadAwareScheduling": 5, **D, "Reservation": 5000}),
    ({"multiPoint": {"enabled": [{"name": "NodeResourcesFitPlus", "weight": 3}]}},
     [*K, "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality", "LoadAwareScheduling", "NodeNUMAResource",
      "DeviceShare", "Reservation", "NodeResourcesFitPlus"],
     {**KW, "NodeResourcesFit": 1, **B, "LoadAwareScheduling": 1, **D, "Reservation": 5000, "NodeResourcesFitPlus": 3}),
], ids=["enabled is appended", "disabled * drops the defaults", "disabled drops one default",
        "re-enabling a default re-weights it in place", "multiPoint enables where implemented"])
def test_merge_like_kube_scheduler(plugins, score, weights):
    got, got_weights = points(profile(plugins))
    assert got["score"] == score and got_weights == weights


def test_filter_plugins_can_be_disabled():
    got, _ = points(profile({"filter": {"disabled": [{"name": "LoadAwareScheduling"}]}}))
    assert "LoadAwareScheduling" not in got["filter"] and "LoadAwareScheduling" in got["score"]


@pytest.mark.parametrize("document, reason", [
    (profile({"score": {"enabled": [{"name": "DynamicResources"}]}}), "plugin 'DynamicResources' does not exist"),
    (profile({"filter": {"enabled": [{"name": "ScarceResourceAvoidance"}]}}),
     "plugin 'ScarceResourceAvoidance' does not extend filter plugin"),
    (profile(plugin_config=[{"name": "LoadAwareScheduling", "args": {"usageThreshold": {"cpu": 1}}}]),
     'LoadAwareScheduling: strict decoding error: unknown field "usageThreshold"'),
    (profile(plugin_config=[{"name": "LoadAwareScheduling", "args": {"usageThresholds": {"cpu": 120}}}]),
     "resource Threshold of cpu should be in [0, 100], got 120"),
    ({**profile(), "profile": []}, 'strict decoding error: unknown field "profile"'),
    ({"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]}, 'duplicate profile with scheduler name "a"'),
    (profile({"score": {"enabled": [{"name": "NodeResourcesFitPlus", "weight": -1}]}}), "weight must be positive"),
    ({**profile(), "apiVersion": "v1"}, "apiVersion must be one of"),
], ids=["unknown plugin", "wrong extension point", "unknown args field", "invalid args", "unknown top-level field",
        "duplicate profiles", "negative weight", "wrong apiVersion"])
def test_invalid_configuration_is_rejected_with_the_reason(document, reason):
    with pytest.raises(config.ConfigError) as err:
        config.parse(document)
    assert reason in str(err.value)


def test_a_rejected_configuration_is_dead_lettered_and_the_previous_one_stays():
    good = scheduler_config(profile({"score": {"disabled": [{"name": "*"}],
                                               "enabled": [{"name": "ScarceResourceAvoidance"}]}}))
    bad = scheduler_config(profile({"score": {"enabled": [{"name": "Nope"}]}}))
    domain, out = run(good, bad)
    letters = [r for n, r in out if n == "DeadLetter"]
    assert len(letters) == 1 and "plugin 'Nope' does not exist" in letters[0]["reason"]
    assert (letters[0]["stage"], letters[0]["sourceTopic"], letters[0]["key"]) == ("scheduling", "koord.configs",
                                                                                  b"koord-scheduler")
    assert letters[0]["payload"] is not None
    assert domain.config.profiles[0].points["score"] == ("ScarceResourceAvoidance",)


def test_configuration_applies_from_its_position_in_the_inbox():
    pack = scheduler_config(profile({"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}]}},
                                    [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]))
    _, out = run(node("a"), node("b"), pod("x", cpu=2000, node_name="b"), pod("spread"), pack, pod("packed"))
    assert [d["nodeName"] for d in decisions(out)][1:] == ["a", "b"]


def test_deleting_the_configuration_restores_the_default_profile():
    domain, _ = run(scheduler_config(profile(name="only")), deleted("KubeSchedulerConfiguration", "koord-scheduler"))
    assert [p.scheduler_name for p in domain.config.profiles] == ["default-scheduler"]


def test_pods_pick_their_profile_by_scheduler_name_and_others_use_the_first():
    document = {"profiles": [
        {"schedulerName": "spread"},
        {"schedulerName": "pack", "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}]}},
         "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}
    _, out = run(scheduler_config(document), node("a"), node("b"), pod("x", node_name="b"),
                 pod("p1", scheduler_name="pack"), pod("p2", scheduler_name="spread"), pod("p3", scheduler_name="other"))
    assert [d["nodeName"] for d in decisions(out)][1:] == ["b", "a", "a"]


def test_backoff_settings_come_from_the_document():
    domain, _ = run(scheduler_config({"podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 4}, ts=T0),
                    pod("p", ts=T0), tick(T0 + 1))
    entry = domain.queue.pods["default/p"]
    assert entry.backoff_until - entry.last_attempt == 2000


def test_restored_domain_keeps_the_configuration():
    domain, _ = run(scheduler_config(profile({"score": {"disabled": [{"name": "*"}]}})))
    restored = SchedulingDomain.restore("default", domain.entries())
    assert restored.config == domain.config


def test_plugin_args_refused_when_the_plugin_is_built_are_dead_lettered_and_the_batch_goes_on():
    """Args that parse but are refused by the plugin itself (an ``ArgsError`` raised while the frameworks are
    built, not a ``ConfigError``) are a rejected configuration like any other; the pods after it are decided."""
    bad = scheduler_config(profile(plugin_config=[{"name": "NodeResourcesFit",
                                                   "args": {"scoringStrategy": {"type": "Bogus"}}}]))
    domain, out = run(node("a"), bad, pod("after"))
    letters = [r for n, r in out if n == "DeadLetter"]
    assert len(letters) == 1 and "scoringStrategy.type must be LeastAllocated or MostAllocated" in letters[0]["reason"]
    assert [(d["pod"]["name"], d["nodeName"]) for d in decisions(out)] == [("after", "a")]
