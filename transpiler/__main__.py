"""`python -m transpiler` runs the `dy2static` command."""
import sys

from .cli import main

sys.exit(main())
