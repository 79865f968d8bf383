"""Analyses of models and data: parameter counts against the papers, attention
distance, the interacting-head paper's maximum number of heads."""
