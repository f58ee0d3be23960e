"""Training: the loop, its progress and state (resume, restart, prune, lock, RNG), optimiser, loss, distributed helpers and validation
(docs/training.md)."""
