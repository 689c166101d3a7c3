"""A measuring run on this machine from its checked parameters to its result: stages, budget, limits, groups and the collectives sweep."""
