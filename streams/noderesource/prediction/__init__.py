"""The node profile: Koordinator's decaying histograms and ProdReclaimable/ProdPeak predictors."""
