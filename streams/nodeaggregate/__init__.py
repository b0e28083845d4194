"""The node aggregate: one state per node, fed by the node inbox; see README.md."""
