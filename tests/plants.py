"""Mistakes the tests plant in working code: one call made a no-op, or one function or method
replaced by a wrong one, for one test.

The Blackwell kernels' synchronisation mistakes that the PTX check and the executor must both
name live in course.execute.planted (notebook 15 shows them to learners, so production code
uses them); a test asks for one of those by its name there. Every other mistake a test plants
(a pipeline method, a stand-in of the executor, a helper of kernels/ or of the emulator) goes
through here, so production code carries nothing that only tests use. Each plant goes through
pytest's monkeypatch, so it is undone when the test ends, and the name must already be there:
a misspelt name fails the test instead of planting nothing.
"""


def _nothing(*args, **kwargs):
    return None


def no_op(monkeypatch, owner, name: str) -> None:
    """`owner.name` (a module's function, a class's method, an executor stand-in's entry)
    does nothing for the rest of the test: the call left out of the code."""
    replaced(monkeypatch, owner, name, _nothing)


def replaced(monkeypatch, owner, name: str, replacement) -> None:
    """`owner.name` is `replacement` for the rest of the test: the wrong code in its place."""
    monkeypatch.setattr(owner, name, replacement, raising=True)
