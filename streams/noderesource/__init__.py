"""The node aggregate's pure core: batch and mid allocatable, CPU normalization and the node profile.

Koordinator's slo-controller ``noderesource`` plugins (BatchResource, MidResource, CPUNormalization) and
koordlet's node prediction (decaying histograms, ProdReclaimable/ProdPeak predictors), recomputed from the
node inbox: Node, NodeMetric, SchedulingDecision and Tick events in, NodeResource records out, with
Koordinator's numbers and calculation messages. ``aggregate`` is the interface the Faust shell calls;
``README.md`` maps the files and the order of the stages.
"""
