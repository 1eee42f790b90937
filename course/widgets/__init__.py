"""Interactive explorers (ipywidgets). Each one also carries a static picture of its
current state, so a notebook saved with outputs still teaches on a static viewer."""
from .base import StaticWidget, figure_png

__all__ = ["StaticWidget", "figure_png"]
