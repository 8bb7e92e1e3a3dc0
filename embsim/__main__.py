"""`python -m embsim ...`: the same command line as the `embsim` console script."""

import sys

from .cli import main

sys.exit(main())
