"""`python -m specviz COMMAND ...` (the same as the `specviz` command): see specviz.tools.cli."""
import sys

from .tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
