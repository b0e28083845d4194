"""Scheduler plugins, one module each; see ``streams.scheduler.registry``."""
