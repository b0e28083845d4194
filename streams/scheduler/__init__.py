"""The scheduling-domain aggregate's pure core: framework, plugins, state."""
