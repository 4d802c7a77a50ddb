"""`python -m specviz COMMAND ...` (the same as the `specviz` command): see specviz.tools.cli."""
import sys

from .engine import settings

try:  # modules read the deployment as they load: a bad SPECVIZ_* variable is one line here, not a traceback
    settings.current()
except ValueError as err:
    print(f"error: {err}", file=sys.stderr)
    sys.exit(2)

from .tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
