"""Node (core/v1, cluster-scoped): schedulability, taints, capacity, allocatable and the images it holds.

``images`` is ``status.images`` as the kubelet reports it, bounded as the kubelet bounds it by default: the
``MAX_IMAGES`` largest (``nodeStatusMaxImages``, largest first, ties in the order given), each with at most
``MAX_NAMES_PER_IMAGE`` names (``maxNamesPerImageInNodeStatus``). A kubelet run with ``--node-status-max-images
-1`` may report thousands; only ImageLocality reads them, and the stored node (its typed fields, not its manifest)
then stays small whatever the node reports. An image may have no names (a dangling one); a name that is not a
string or a size that is not a whole number >= 0 is a field error.
"""

from streams.objects.fields import FieldReader, item
from streams.objects.kind import CORE_GROUP, KindSpec
from streams.objects.taints import read_taints

MAX_IMAGES = 50
"""kubelet's default ``nodeStatusMaxImages``."""
MAX_NAMES_PER_IMAGE = 5
"""kubelet's ``maxNamesPerImageInNodeStatus``."""


def read_images(reader: FieldReader, value: object, path: str) -> list[dict]:
    """``status.images`` as ContainerImage records, the ``MAX_IMAGES`` largest, ``MAX_NAMES_PER_IMAGE`` names each."""
    images = []
    for index, entry in enumerate(reader.sequence(value, path)):
        where = item(path, index)
        entry = reader.mapping(entry, where)
        names = [reader.string(name, item(f"{where}.names", i))
                 for i, name in enumerate(reader.sequence(entry.get("names"), f"{where}.names"))]
        size = reader.integer(entry.get("sizeBytes"), f"{where}.sizeBytes", low=0)
        images.append({"names": [name for name in names if name is not None][:MAX_NAMES_PER_IMAGE],
                       "sizeBytes": size or 0})
    images.sort(key=lambda image: -image["sizeBytes"])
    return images[:MAX_IMAGES]


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    status = reader.mapping(body.get("status"), "status")
    return {
        "unschedulable": bool(reader.boolean(spec.get("unschedulable"), "spec.unschedulable")),
        "taints": read_taints(reader, spec.get("taints"), "spec.taints"),
        "capacity": reader.resources(status.get("capacity"), "status.capacity"),
        "allocatable": reader.resources(status.get("allocatable"), "status.allocatable"),
        "images": read_images(reader, status.get("images"), "status.images"),
    }


SPEC = KindSpec(
    kind="Node",
    groups=(CORE_GROUP,),
    schema="Node",
    topic="nodes",
    namespaced=False,
    plural="nodes",
    short_names=("no",),
    convert=convert,
)
