"""Replay: re-run an aggregate's inbox through its pure core and compare with what was recorded."""
