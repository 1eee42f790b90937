"""The stored notebooks' pictures are palette PNGs (course.viz.compact_png): the same
pictures at a fraction of the bytes, so the repository stays small."""

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from course import ROOT
from course.viz import compact_png

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _figure_png() -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.linspace(0, 6, 200)
    for k in range(5):
        ax.plot(x, np.sin(x + k), label=f"curve {k}")
    ax.imshow(np.add.outer(np.arange(16), np.arange(16)) % 7, extent=(0, 2, -1, 0), cmap="viridis")
    ax.legend()
    ax.set_title("a labelled figure")
    out = io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue()


def test_a_palette_png_is_smaller_and_looks_the_same():
    png = _figure_png()
    small = compact_png.palette_png(png)
    assert len(small) < 0.6 * len(png)
    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)
    b = np.asarray(Image.open(io.BytesIO(small)).convert("RGB"), dtype=float)
    assert a.shape == b.shape
    assert np.abs(a - b).mean() < 2.0  # of 255: no visible change
    assert compact_png.palette_png(small) == small  # stored ones stay as they are


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_stored_notebooks_pictures_are_palette_pngs(path):
    """`python -m course run --inplace` stores them so; a notebook saved another way would
    carry full-colour PNGs (three times the bytes): run it through the runner."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            encoded = output.get("data", {}).get("image/png")
            if encoded:
                png = base64.b64decode("".join(encoded) if isinstance(encoded, list) else encoded)
                assert Image.open(io.BytesIO(png)).mode == "P", f"cell {cell.get('id')}"
