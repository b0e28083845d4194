"""LowNodeLoad: Koordinator's load-aware rebalancing (``pkg/descheduler/framework/plugins/loadaware``)."""

from streams.descheduler.lownodeload.args import NAME, LowNodeLoadArgs, NodePool
from streams.descheduler.lownodeload.balance import Eviction, LowNodeLoad

__all__ = ["NAME", "Eviction", "LowNodeLoad", "LowNodeLoadArgs", "NodePool"]
