"""Benchmarks: each prints its figures and compares them with the stored baseline beside it."""
