"""Node QoS: koordlet's QoS manager as a pure planner that the node aggregate runs (see README.md)."""
