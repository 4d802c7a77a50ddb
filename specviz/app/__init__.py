"""The gradio app: the only subpackage that imports gradio. `python app.py` calls `launch()`."""
from .layout import i18n
from .server import CSS, PAGE_JS, launch
from .wiring import build_app

__all__ = ["CSS", "PAGE_JS", "build_app", "i18n", "launch"]
