"""What the notebooks do with a kernel, in one place, so a notebook cell is a call:
checks over ragged shapes, live benchmarks or their recorded fallback, the ladder."""
