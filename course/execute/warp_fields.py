"""Fields that kernel code sets on an object made on the host, kept per warp.

On the GPU, CuTe DSL traces a kernel's Python once: `self.tRS_rD = thr_copy.partition_S(...)`
inside kernel code (NVIDIA's EFC helpers keep each thread's partitions on one helper object)
stores a value that is symbolic in the thread index, so every thread reads its own
partition back. The executor runs that Python once per warp, interleaved at barriers, on one
shared Python object: without this module a warp would read back the partition the warp
that ran last stored, and the executor would report a race the kernel does not have.

So a field set while a warp runs (course.execute.current) goes into that warp's layer of
the object; a read in that warp finds it there first. A warp that never set a field reads
the value the last warp to set it stored (what the object held before, as a trace's program
order would give), then the host's own value. Host code (no warp running) sets and reads
the object as it is. Only objects that kernel code writes to pay for it: the layers live in
the object's own `__dict__`, under LAYERS, made on the first write from a warp.
"""

from __future__ import annotations

from course.execute import current

LAYERS = "__executor_warp_fields__"
_HOST, _LAST = "host", "last"


def set_in_warp(fields: dict, name: str, value) -> bool:
    """Keep `name = value` in the running warp's layer of the object whose `__dict__` is
    fields; False (nothing kept) when no warp runs: host code sets it as usual."""
    w = current.current_warp()
    if w is None:
        return False
    layers = fields.get(LAYERS)
    if layers is None:
        layers = fields[LAYERS] = {_HOST: {}, _LAST: {}}
    if name in fields:  # the host's value moves aside, so that reads come through here
        layers[_HOST][name] = fields.pop(name)
    layers.setdefault(id(w), (w, {}))[1][name] = value
    layers[_LAST][name] = value
    return True


def get_in_warp(fields: dict, name: str, missing=None):
    """The value of `name` a read from the running warp finds in the layers (or in the
    host's moved value); `missing` where they hold none."""
    layers = fields.get(LAYERS)
    if layers is None:
        return missing
    w = current.current_warp()
    if w is not None:
        own = layers.get(id(w))
        if own is not None and own[0] is w and name in own[1]:
            return own[1][name]
        if name in layers[_LAST]:
            return layers[_LAST][name]
    return layers[_HOST].get(name, missing)
