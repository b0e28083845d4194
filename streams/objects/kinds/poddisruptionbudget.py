"""PodDisruptionBudget (policy/v1, namespaced): how many of the selected pods may be disrupted at once.

Typed: ``status.disruptionsAllowed`` (absent is 0, as the API server reports a budget its disruption
controller has not computed yet); the selector and min/max stay in the manifest, which the scheduler's
DefaultPreemption reads (``spec.selector``, ``status.disruptedPods``). Checked as the API server would:
``spec.selector`` an object, ``spec.minAvailable`` and ``spec.maxUnavailable`` not both set, each an
integer >= 0 or a percentage of at most 100 % (kube-apiserver's ``ValidatePodDisruptionBudgetSpec``:
``ValidatePositiveIntOrPercent`` then ``IsNotMoreThan100Percent``, with its message).
"""

import re

from streams.objects.fields import INT32_MAX, FieldReader
from streams.objects.kind import KindSpec

_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent(reader: FieldReader, value: object, path: str) -> None:
    if value is None:
        return
    if isinstance(value, str):
        if not _PERCENT.match(value):
            reader.fail(path, f'must be an integer or a percentage such as "50%", got "{value}"')
        elif int(value[:-1]) > 100:
            reader.fail(path, "must not be greater than 100%")
        return
    reader.integer(value, path, low=0, high=INT32_MAX)


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    status = reader.mapping(body.get("status"), "status")
    reader.mapping(spec.get("selector"), "spec.selector")
    _int_or_percent(reader, spec.get("minAvailable"), "spec.minAvailable")
    _int_or_percent(reader, spec.get("maxUnavailable"), "spec.maxUnavailable")
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        reader.fail("spec", "minAvailable and maxUnavailable cannot be both set")
    return {"disruptionsAllowed": reader.integer(status.get("disruptionsAllowed"), "status.disruptionsAllowed",
                                                 low=0, high=INT32_MAX) or 0}


SPEC = KindSpec(
    kind="PodDisruptionBudget",
    groups=("policy",),
    schema="PodDisruptionBudget",
    topic="poddisruptionbudgets",
    namespaced=True,
    plural="poddisruptionbudgets",
    short_names=("pdb",),
    convert=convert,
)
