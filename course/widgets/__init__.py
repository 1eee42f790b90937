"""Interactive explorers (ipywidgets). Each one also carries a static picture of its
current state, so a notebook saved with outputs still teaches on a static viewer.

    tile_roofline.tile_roofline      notebook 00: tile size vs the roofline
    layout_explorer.LayoutExplorer   notebook 02: shape:stride and CuTe's algebra, as a grid
    ownership_map.OwnershipMap       notebook 03 on: who holds each cell of a tile, and where
"""

from course.widgets.static_widget import StaticWidget, figure_png

__all__ = ["StaticWidget", "figure_png"]
