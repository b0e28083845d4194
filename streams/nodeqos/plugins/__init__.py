"""Node-QoS strategies, one module each; registered in ``streams.nodeqos.registry``."""
