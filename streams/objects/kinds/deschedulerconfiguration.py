"""DeschedulerConfiguration (descheduler/v1alpha2): Koordinator's koord-descheduler configuration.

Profiles enable LowNodeLoad (balance) and MigrationController (evict) with their args; the global
fields are ``deschedulingInterval``, ``dryRun`` and v1.6's ``maxNoOfPodsToEvictPerNode`` /
``PerNamespace`` / ``Total``. Only the shape is checked here; the scheduling aggregate parses the args
when it applies the document (``streams.descheduler.config``) and rejects a bad one with the reason.
The document usually has no metadata; it is then named ``koord-descheduler``. It shares the configs
topic with the KubeSchedulerConfiguration (both cluster-scoped): a tombstone there deletes whichever of
the two the scheduling domain holds under that name.
"""

from streams.objects.fields import FieldReader, child, item
from streams.objects.kind import KindSpec


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    for index, raw in enumerate(reader.sequence(body.get("profiles"), "profiles")):
        profile = reader.mapping(raw, item("profiles", index))
        reader.string(profile.get("name"), child(item("profiles", index), "name"))
        reader.mapping(profile.get("plugins"), child(item("profiles", index), "plugins"))
        reader.sequence(profile.get("pluginConfig"), child(item("profiles", index), "pluginConfig"))
    return {}


SPEC = KindSpec(
    kind="DeschedulerConfiguration",
    groups=("descheduler",),
    schema="DeschedulerConfiguration",
    topic="configs",
    namespaced=False,
    plural="deschedulerconfigurations",
    short_names=(),
    convert=convert,
    default_name="koord-descheduler",
)
