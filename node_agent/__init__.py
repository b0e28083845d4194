"""The node agent: collects this host's node, pod and device usage and publishes it as Koordinator objects.

See README.md in this folder for the stages and the map of files.
"""
