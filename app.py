"""specviz: speculative decoding, step by step. `python app.py` (Hugging Face Spaces runs this file)."""
import spaces  # noqa: F401, I001 - first: on ZeroGPU it patches torch before anything touches CUDA (a no-op elsewhere)
import sys

from specviz.engine.settings import current as current_deployment

if __name__ == "__main__":
    try:  # a bad SPECVIZ_* value stops the server with one line naming it, before anything is imported or loaded
        current_deployment()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    from specviz.app import launch
    from specviz.engine.models.loading import check_offer

    try:  # so do offered presets that the pairs kept cannot hold together
        check_offer()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    launch()
