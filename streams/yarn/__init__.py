"""Hadoop YARN co-location (Koordinator's yarn-copilot): a local YARN, its NodeManagers as a kind, the resource sync."""
