"""PodDisruptionBudget: min/max available checked as kube-apiserver checks them."""

import pytest

from tests.streams.objects.support import problems_of, record_of

PDB = ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: b, namespace: default}}\n"
       "spec: {{selector: {{matchLabels: {{app: web}}}}, {spec}}}\n")


@pytest.mark.parametrize("spec", ["minAvailable: 2", "minAvailable: '100%'", "maxUnavailable: '0%'",
                                  "maxUnavailable: 0"])
def test_valid_budgets_are_accepted(spec):
    assert record_of(PDB.format(spec=spec)).record["disruptionsAllowed"] == 0


@pytest.mark.parametrize("spec, problem", [
    ("minAvailable: '150%'", "spec.minAvailable: must not be greater than 100%"),
    ("maxUnavailable: '101%'", "spec.maxUnavailable: must not be greater than 100%"),
    ("minAvailable: -1", "spec.minAvailable: must be between 0 and 2147483647, got -1"),
    ("minAvailable: 'half'", 'spec.minAvailable: must be an integer or a percentage such as "50%", got "half"'),
    ("minAvailable: 1, maxUnavailable: 1", "spec: minAvailable and maxUnavailable cannot be both set"),
], ids=["minAvailable-over-100-percent", "maxUnavailable-over-100-percent", "negative", "not-a-percentage",
        "both-set"])
def test_invalid_budgets_are_refused_with_the_field_named(spec, problem):
    assert problems_of(PDB.format(spec=spec)) == [problem]
