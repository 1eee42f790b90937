from course.models import coalescing as co


def test_the_three_warp_shapes():
    s, t, v = (co.warp_of(x) for x in ("scalar", "strided", "vector"))
    assert (len(s.lines), len(s.sectors), s.efficiency) == (1, 4, 1.0)
    assert (len(t.lines), len(t.sectors), t.efficiency) == (32, 32, 0.125)
    assert (len(v.lines), len(v.sectors), v.requested_bytes, v.efficiency) == (4, 16, 512, 1.0)


def test_misaligned_and_strided_by_two():
    a = co.analyze([4 + 4 * l for l in range(32)], 4)  # 4 bytes off a line
    assert len(a.lines) == 2 and len(a.sectors) == 5
    b = co.analyze([8 * l for l in range(32)], 4)
    assert len(b.lines) == 2 and b.efficiency == 0.5
    assert "2 line(s)" in b.summary()


def test_constants_match_the_kernels():
    from kernels import copies

    assert co.STRIDED_WIDTH == copies.STRIDED_WIDTH and co.VARIANTS == copies.VARIANTS
