"""Pictures stored small: the PNGs of a stored notebook as 256-colour palette PNGs.

The notebooks are stored executed, their pictures inside them as base64 PNGs, so the
pictures are most of the repository's bytes. matplotlib writes full-colour PNGs; the
course's figures (flat fills, lines, text) hold few colours, and an adaptive 256-colour
palette keeps them looking the same at about a third of the bytes. The notebook runner
(`python -m course run --inplace`) compacts each notebook it stores; a learner's own run in
JupyterLab keeps matplotlib's PNGs.
"""

from __future__ import annotations

import base64
import io


def palette_png(png: bytes) -> bytes:
    """The same picture as an adaptive 256-colour PNG (transparency flattened on white);
    the original when it is one already, or when that is not smaller."""
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    if image.mode == "P":
        return png
    if image.mode in ("RGBA", "LA", "P"):
        image = image.convert("RGBA")
        flat = Image.new("RGB", image.size, "white")
        flat.paste(image, mask=image.split()[-1])
        image = flat
    else:
        image = image.convert("RGB")
    small = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(small, "PNG", optimize=True)
    return small.getvalue() if small.tell() < len(png) else png


def compact_notebook(nb) -> int:
    """Every image/png output of notebook `nb` (nbformat) as a palette PNG, in place; the
    bytes saved."""
    saved = 0
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            encoded = data.get("image/png")
            if not encoded:
                continue
            png = base64.b64decode("".join(encoded) if isinstance(encoded, list) else encoded)
            small = palette_png(png)
            if len(small) < len(png):
                data["image/png"] = base64.b64encode(small).decode("ascii")
                saved += len(png) - len(small)
    return saved
