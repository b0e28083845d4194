"""NodeResourceTopology (topology.node.k8s.io, cluster-scoped, named after its node): the node's NUMA zones.

The CRD's v1alpha1 shape, as koordlet reports it: ``zones[] {name, type,
resources[] {name, capacity, allocatable, available}}`` at the top level (not
under ``spec``), zone ``node-<i>`` of type ``Node`` for NUMA node i. Each
zone becomes a TopologyZone record, quantities as canonical integers (cpu
milli-cores, memory bytes). ``capacity`` is required; ``allocatable``
defaults to it and ``available`` to ``allocatable`` (the CRD requires all
three; hand-written objects may leave them out). Zone names must be unique
within the object.
"""

from streams.objects.fields import FieldReader, child, item
from streams.objects.kind import KindSpec
from streams.objects.names import qualified_name_error
from streams.objects.quantity import QuantityError, to_canonical

GROUP = "topology.node.k8s.io"
QUANTITIES = ("capacity", "allocatable", "available")


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    zones, seen = [], set()
    for index, raw in enumerate(reader.sequence(body.get("zones"), "zones")):
        path = item("zones", index)
        zone = reader.mapping(raw, path)
        name = reader.string(zone.get("name"), child(path, "name"), required=True) or ""
        if name in seen:
            reader.fail(child(path, "name"), f'duplicate zone "{name}"')
        seen.add(name)
        zones.append({
            "name": name,
            "type": reader.string(zone.get("type"), child(path, "type")) or "",
            "resources": _resources(reader, zone.get("resources"), child(path, "resources")),
        })
    return {"zones": zones}


def _resources(reader: FieldReader, value: object, path: str) -> list[dict]:
    resources = []
    for index, raw in enumerate(reader.sequence(value, path)):
        entry_path = item(path, index)
        entry = reader.mapping(raw, entry_path)
        name = reader.string(entry.get("name"), child(entry_path, "name"), required=True) or ""
        if name and (reason := qualified_name_error(name)):
            reader.fail(child(entry_path, "name"), f"invalid resource name: {reason}")
        values: dict[str, int | None] = {}
        for field in QUANTITIES:
            raw_value = entry.get(field)
            if raw_value is None:
                if field == "capacity":
                    reader.fail(child(entry_path, field), "required")
                values[field] = None
                continue
            values[field] = _quantity(reader, name, raw_value, child(entry_path, field))
        capacity = values["capacity"] or 0
        allocatable = capacity if values["allocatable"] is None else values["allocatable"]
        available = allocatable if values["available"] is None else values["available"]
        resources.append({"name": name, "capacity": capacity, "allocatable": allocatable, "available": available})
    return resources


def _quantity(reader: FieldReader, name: str, raw: object, path: str) -> int | None:
    if isinstance(raw, str):
        raw = raw.strip()
    try:
        canonical = to_canonical(name, raw)
    except QuantityError as err:
        reader.fail(path, str(err))
        return None
    if canonical < 0:
        reader.fail(path, f'quantity must not be negative: "{raw}"')
        return None
    return canonical


SPEC = KindSpec(
    kind="NodeResourceTopology",
    groups=(GROUP,),
    schema="NodeResourceTopology",
    topic="noderesourcetopologies",
    namespaced=False,
    plural="noderesourcetopologies",
    short_names=("nrt",),
    convert=convert,
)
