"""NodeNUMAResource (Koordinator ``pkg/scheduler/plugins/nodenumaresource``): CPU topology and cpuset selection."""

from streams.scheduler.plugins.nodenumaresource.plugin import NAME, NodeNUMAResource

__all__ = ["NAME", "NodeNUMAResource"]
