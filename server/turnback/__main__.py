"""`python -m turnback …` is the `turnback` command."""

import sys

from .cli.fast import main

sys.exit(main())
