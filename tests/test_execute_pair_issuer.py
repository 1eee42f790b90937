"""Which CTA of a pair may issue a cta_group::2 tcgen05.mma on the executor: either, as the
PTX ISA's tcgen05 issue granularity says ("Issue from a single thread from the CTA-Pair would
initiate the base operation"); the odd issuer is told, in a note, where the executor puts
the rows it is not told about."""

from types import SimpleNamespace

from course.execute import machine, tcgen05


def _cluster(size: int) -> list:
    cluster = SimpleNamespace(ctas=[])
    cluster.ctas.extend(
        SimpleNamespace(rank=r, cluster=cluster, block=(r, 0, 0)) for r in range(size)
    )
    return cluster.ctas


def test_the_even_cta_issues_without_a_note(monkeypatch):
    noted = []
    monkeypatch.setattr(machine, "note", lambda kind, detail, site: noted.append(kind))
    ctas = _cluster(4)
    assert tcgen05._pair(ctas[2], None) == [ctas[2], ctas[3]]
    assert noted == []


def test_an_odd_cta_may_issue_and_the_pair_keeps_its_order(monkeypatch):
    noted = []
    monkeypatch.setattr(machine, "note", lambda kind, detail, site: noted.append((kind, detail)))
    ctas = _cluster(4)
    assert tcgen05._pair(ctas[3], None) == [ctas[2], ctas[3]]  # even rank first, as issued by 2
    ((kind, detail),) = noted
    assert kind == tcgen05.ODD_ISSUER
    assert "allows from either CTA of a pair" in detail and "its own reading" in detail
