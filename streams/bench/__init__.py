"""Benchmarks through the real broker (``koord bench ...``); pure-core benchmarks live beside each core."""
