"""`python -m specviz COMMAND ...` and the `specviz` command (pyproject.toml's script): see specviz.tools.cli."""
import sys

from .engine import settings


def main() -> int:
    """Modules read the deployment as they load, so it is read here first, before the command line's modules
    import: a bad SPECVIZ_* variable is one error line and exit 2, not an import traceback."""
    try:
        settings.current()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from .tools.cli import main as command_line
    return command_line()


if __name__ == "__main__":
    sys.exit(main())
