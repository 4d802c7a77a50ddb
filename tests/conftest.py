import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
