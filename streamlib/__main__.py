"""``python -m streamlib``: see :mod:`streamlib.cli`."""
import sys

from .cli import main

sys.exit(main())
