"""The node aggregate: one state per node, fed by the node inbox.

It composes the node-resource calculation (``streams.noderesource``) and the
node-QoS plan (``streams.nodeqos``): ``node`` is one node's transition,
``statecodec`` its binary form, ``partition`` one inbox partition (what the
agent and ``koord replay`` drive), ``settings`` the configuration passed in.
``README.md`` maps the files.
"""
