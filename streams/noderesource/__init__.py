"""The node-resource calculation: batch and mid allocatable, CPU normalization and the node profile.

Koordinator's slo-controller ``noderesource`` plugins (BatchResource, MidResource, CPUNormalization) and
koordlet's node prediction (decaying histograms, ProdReclaimable/ProdPeak predictors), with Koordinator's
numbers and calculation messages. ``reconcile`` runs one calculation through the stages; the node aggregate
(``streams.nodeaggregate``) runs it for every event. ``README.md`` maps the files and the order of the stages.
"""
