"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io): the scheduler's profiles and plugin args.

The document usually has no metadata; it is then named ``koord-scheduler``.
Only its shape is checked here (profiles is a list of objects with a
schedulerName); the scheduling aggregate parses the plugin sections when it
applies the document, and rejects a bad one with the reason.
"""

from streams.objects.fields import FieldReader, child, item
from streams.objects.kind import KindSpec


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    for index, raw in enumerate(reader.sequence(body.get("profiles"), "profiles")):
        profile = reader.mapping(raw, item("profiles", index))
        reader.string(profile.get("schedulerName"), child(item("profiles", index), "schedulerName"))
        reader.mapping(profile.get("plugins"), child(item("profiles", index), "plugins"))
        reader.sequence(profile.get("pluginConfig"), child(item("profiles", index), "pluginConfig"))
    return {}


SPEC = KindSpec(
    kind="KubeSchedulerConfiguration",
    groups=("kubescheduler.config.k8s.io",),
    schema="KubeSchedulerConfiguration",
    topic="configs",
    namespaced=False,
    plural="kubeschedulerconfigurations",
    short_names=(),
    convert=convert,
    default_name="koord-scheduler",
)
