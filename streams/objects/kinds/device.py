"""Device (scheduling.koordinator.sh, cluster-scoped, named after its node): the node's GPUs, RDMA NICs, FPGAs.

Each ``spec.devices[]`` entry becomes a DeviceInfo record. Koordinator's
DeviceInfo spells the UUID ``id``; ``uuid`` is accepted too. A device that does
not state ``health`` is taken as healthy (the DeviceInfo schema's default;
Koordinator's CRD defaults it to false).
"""

from streams.objects.fields import INT32_MAX, FieldReader, child, item
from streams.objects.kind import KindSpec


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    devices = []
    for index, raw in enumerate(reader.sequence(spec.get("devices"), "spec.devices")):
        path = item("spec.devices", index)
        device = reader.mapping(raw, path)
        uuid = reader.string(device.get("id"), child(path, "id"))
        alias = reader.string(device.get("uuid"), child(path, "uuid"))
        if uuid and alias and uuid != alias:
            reader.fail(child(path, "uuid"), f'"{alias}" differs from id "{uuid}"')
        health = reader.boolean(device.get("health"), child(path, "health"))
        devices.append(
            {
                "type": reader.string(device.get("type"), child(path, "type"), required=True) or "",
                "minor": reader.integer(device.get("minor"), child(path, "minor"), low=0, high=INT32_MAX),
                "uuid": uuid or alias,
                "health": True if health is None else health,
                "resources": reader.resources(device.get("resources"), child(path, "resources")),
            }
        )
    return {"devices": devices}


SPEC = KindSpec(
    kind="Device",
    groups=("scheduling.koordinator.sh",),
    schema="Device",
    topic="devices",
    namespaced=False,
    plural="devices",
    short_names=(),
    convert=convert,
)
