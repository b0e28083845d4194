"""CSINode (storage.k8s.io/v1, cluster-scoped, named after its node): the CSI drivers installed on a node.

Each ``spec.drivers[]`` becomes a CSINodeDriver record: ``name`` and ``nodeID`` (both required, as the API
server requires them), ``allocatable.count`` (the most volumes of the driver the node can attach; null when
the driver states no limit) and ``topologyKeys``. NodeVolumeLimits reads the counts.
"""

from streams.objects.fields import INT32_MAX, FieldReader, child, item
from streams.objects.kind import KindSpec


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    drivers, seen = [], set()
    for index, raw in enumerate(reader.sequence(spec.get("drivers"), "spec.drivers")):
        path = item("spec.drivers", index)
        driver = reader.mapping(raw, path)
        name = reader.string(driver.get("name"), child(path, "name"), required=True) or ""
        if name in seen:
            reader.fail(child(path, "name"), f'Duplicate value: "{name}"')
        seen.add(name)
        allocatable = reader.mapping(driver.get("allocatable"), child(path, "allocatable"))
        keys = reader.sequence(driver.get("topologyKeys"), child(path, "topologyKeys"))
        drivers.append({
            "name": name,
            "nodeID": reader.string(driver.get("nodeID"), child(path, "nodeID"), required=True) or "",
            "count": reader.integer(allocatable.get("count"), child(path, "allocatable.count"), low=0, high=INT32_MAX),
            "topologyKeys": [key for key in keys if isinstance(key, str)],
        })
    return {"drivers": drivers}


SPEC = KindSpec(
    kind="CSINode",
    groups=("storage.k8s.io",),
    schema="CSINode",
    topic="csinodes",
    namespaced=False,
    plural="csinodes",
    short_names=(),
    convert=convert,
)
