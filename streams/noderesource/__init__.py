"""The node aggregate's pure core: node resources (batch/mid allocatable)."""
