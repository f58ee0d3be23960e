"""Decoding: beam and greedy search, batched decoding of data sets, ensembles, the Translator API and CTranslate2 export."""
