"""A ClusterColocationProfile is refused with the bad field named (``streams.colocationprofile.profile``)."""

from __future__ import annotations

import pytest

from streams.colocationprofile.profile import ProfileError, parse_probability, parse_profile
from streams.koordinator.colocationprofile import API_VERSION, KIND


def body(**spec) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "batch"}, "spec": spec}


BAD = {
    "probability over 100": (body(probability=150), "spec.probability: must be between 0 and 100"),
    "probability not a percent": (body(probability="half"), "spec.probability: invalid value for IntOrString"),
    "negative percent": (body(probability="-5%"), "spec.probability: must be between 0 and 100"),
    "selector operator": (body(selector={"matchExpressions": [{"key": "a", "operator": "Near"}]}),
                          "spec.selector.matchExpressions[0]: 'Near' is not a valid label selector operator"),
    "namespace selector In without values": (
        body(namespaceSelector={"matchExpressions": [{"key": "a", "operator": "In"}]}),
        "spec.namespaceSelector.matchExpressions[0]: values must be non-empty for operator In"),
    "selector shape": (body(selector=["a"]), "spec.selector: a label selector must be an object"),
    "qos class": (body(qosClass="GOLD"), "spec.qosClass: 'GOLD' is not one of LSE, LSR, LS, BE, SYSTEM"),
    "koordinator priority": (body(koordinatorPriority="high"), "spec.koordinatorPriority: must be a 32-bit"),
    "labels": (body(labels={"a": 1}), "spec.labels: must map strings to strings"),
    "patch": (body(patch="x"), "spec.patch: must be an object"),
    "no name": ({"apiVersion": API_VERSION, "kind": KIND, "spec": {}}, "metadata.name: required"),
}


@pytest.mark.parametrize("manifest, message", BAD.values(), ids=BAD.keys())
def test_a_bad_profile_is_refused_with_the_field_named(manifest, message):
    with pytest.raises(ProfileError) as error:
        parse_profile(manifest)
    assert any(problem.startswith(message) for problem in error.value.problems), error.value.problems


def test_every_bad_field_is_named_at_once():
    with pytest.raises(ProfileError) as error:
        parse_profile(body(probability=101, qosClass="GOLD"))
    assert [p.split(":")[0] for p in error.value.problems] == ["spec.probability", "spec.qosClass"]


@pytest.mark.parametrize("value, percent", [(None, None), (0, 0), (100, 100), ("30%", 30), ("0%", 0)],
                         ids=["absent", "0", "100", "30%", "0%"])
def test_probability_is_an_int_or_a_percent(value, percent):
    if value is None:
        assert parse_profile(body()).probability == 100
    else:
        assert parse_probability(value) == percent


def test_a_valid_profile_is_typed():
    profile = parse_profile(body(qosClass="BE", probability="40%", labels={"b": "2", "a": "1"},
                                 selector={"matchLabels": {"app": "spark"}}))
    assert (profile.name, profile.qos_class, profile.probability, profile.labels) == (
        "batch", "BE", 40, (("a", "1"), ("b", "2")))
    assert profile.selector.matches({"app": "spark"}) and not profile.selector.matches({"app": "web"})
