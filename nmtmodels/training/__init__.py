"""Training: the loop, its state (resume, restart, prune, lock, RNG), optimiser, loss, distributed helpers and validation
(docs/training.md)."""
