"""Model families; importing this package registers every built-in family."""
from nmtmodels.models import transformer  # noqa: F401  (registers "transformer")
from nmtmodels.models import esc  # noqa: F401,E402  (registers "bsfnmt", "btfnmt", "bbfnmt")
from nmtmodels.models import char2word  # noqa: F401  (registers "char2char" and "char2word")
from nmtmodels.models import lattice  # noqa: F401,E402  (registers "lattice_transformer")
from nmtmodels.models import reordering  # noqa: F401  (registers "reordering")
from nmtmodels.models import graph  # noqa: F401,E402  (registers "graph_transformer")
