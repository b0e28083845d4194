"""The ConfigMap's name, for ``streams.bench.nodes`` only; it lives in ``streams.sloconfig.document``."""

from streams.sloconfig.document import CONFIG_NAME, CONFIG_NAMESPACE

__all__ = ["CONFIG_NAME", "CONFIG_NAMESPACE"]
