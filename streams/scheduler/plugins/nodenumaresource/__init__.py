"""NodeNUMAResource (Koordinator ``pkg/scheduler/plugins/nodenumaresource``): CPU topology and cpuset selection."""
