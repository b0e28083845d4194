"""A real Kubernetes control plane for development and tests, and (later) the bridge to a cluster."""
