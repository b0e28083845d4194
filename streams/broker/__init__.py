"""Kafka connectivity: the embedded broker and the workarounds it needs."""
