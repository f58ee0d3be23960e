"""Model families; importing this package registers every built-in family."""
from nmtmodels.models import transformer  # noqa: F401  (registers "transformer")
