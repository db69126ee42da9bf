"""`python -m turnback …` is the `turnback` command (`command.py`: the command line and its bench)."""

import sys

from .command import main

sys.exit(main())
