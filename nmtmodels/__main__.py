"""``python -m nmtmodels train|translate|average|vocab|export ...`` (see :mod:`nmtmodels.cli`)."""
import sys

from nmtmodels.cli import main

sys.exit(main())
