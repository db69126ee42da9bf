"""`python -m turnback …` is the `turnback` command."""

import sys

from .cli.main import main

sys.exit(main())
