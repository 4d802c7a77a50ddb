"""specviz: speculative decoding, step by step. `python app.py` (Hugging Face Spaces runs this file)."""
from specviz.app import launch

if __name__ == "__main__":
    launch()
