"""Gradio-free presentation: the palette, HTML rendering, plotly figures, views of a tab's run, export."""
