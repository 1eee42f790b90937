"""A widget that is also a picture.

`StaticWidget(view, render)` wraps an ipywidgets view and a function that draws its
current state with matplotlib. Displayed, it offers the front end both: JupyterLab
renders the live widget, while a static viewer (GitHub, nbviewer, an exported HTML
or slides without a kernel) falls back to the PNG in the same output.
"""

from __future__ import annotations

import base64
import io
from typing import Callable

import matplotlib.pyplot as plt


def figure_png(fig, dpi: int = 96) -> bytes:
    """PNG bytes of a matplotlib figure (which is then closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def show_figure(fig) -> None:
    """Display a figure in the current output (a widget's Output area) and close it."""
    from IPython.display import display

    display(fig)
    plt.close(fig)


class StaticWidget:
    """An ipywidgets view plus a static rendering of its current state."""

    def __init__(self, view, render: Callable[[], object]):
        self.view = view
        self.render = render

    def snapshot(self) -> bytes:
        """PNG of what the widget shows right now."""
        return figure_png(self.render())

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.view._repr_mimebundle_(include=include, exclude=exclude)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["image/png"] = base64.b64encode(self.snapshot()).decode()
        return data
