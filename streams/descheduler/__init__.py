"""Koordinator's descheduler rebuilt as pure code: load-aware rebalancing (LowNodeLoad), its pod order,
anomaly detector and eviction limiter. See README.md."""
