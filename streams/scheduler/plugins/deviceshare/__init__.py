"""DeviceShare: GPUs, RDMA NICs and FPGAs allocated to pods per device (Koordinator's ``deviceshare``)."""

from streams.scheduler.plugins.deviceshare.plugin import NAME, DeviceShare

__all__ = ["NAME", "DeviceShare"]
