"""Model families; importing this package registers every built-in family."""
from nmtmodels.models import (
    char2word,  # noqa: F401  (registers "char2char" and "char2word")
    esc,  # noqa: F401  (registers "bsfnmt", "btfnmt", "bbfnmt")
    graph,  # noqa: F401  (registers "graph_transformer")
    lattice,  # noqa: F401  (registers "lattice_transformer")
    reordering,  # noqa: F401  (registers "reordering")
    transformer,  # noqa: F401  (registers "transformer")
)
