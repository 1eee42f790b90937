"""The TMEM pictures render, labelled, from the course's data."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from course.models.tmem_ownership import epilogue_tmem_pairs, pair_tile_pairs  # noqa: E402
from course.viz.tmem_pictures import epilogue_ownership, tmem_allocation  # noqa: E402


def _labelled(fig):
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    return ax


def test_allocation_picture_names_each_block_and_the_warp_quarters():
    fig = tmem_allocation([("slot 0", 0, 128), ("slot 1", 128, 128)], source="source: test")
    ax = _labelled(fig)
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "slot 0" in texts and "128..255" in texts and "warp 3 only" in texts
    plt.close(fig)


def test_ownership_picture_for_one_cta_and_a_pair():
    for pairs, shape in (
        (epilogue_tmem_pairs(128), (128, 128)),
        (pair_tile_pairs(128), (256, 128)),
    ):
        fig = epilogue_ownership(pairs, shape, title="t", source="source: test")
        ax = _labelled(fig)
        image = ax.images[0].get_array()
        assert image.shape[:2] == shape
        texts = " ".join(t.get_text() for t in ax.texts)
        assert "warp 3" in texts and ("CTA 1" in texts) == (shape[0] == 256)
        plt.close(fig)
