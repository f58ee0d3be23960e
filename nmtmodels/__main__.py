"""``python -m nmtmodels COMMAND ...``: the same as ``python -m nmtmodels.cli COMMAND ...``
(the commands of :data:`nmtmodels.cli.COMMANDS`)."""
import sys

from nmtmodels.cli import main

sys.exit(main())
