"""Reading another CTA's shared memory (distributed shared memory, DSMEM).

`cute.arch.map_dsmem_ptr(ptr, rank)` maps this CTA's shared-memory address to the same
address in CTA `rank` of the cluster (PTX `mapa`); CuTe DSL's tensors do not load through
such a pointer, so `load` is the one plain load from the cluster's shared window,
`ld.shared::cluster`; and `arrive` hands data over: an mbarrier arrival (on CTA `rank`'s
barrier) that releases this thread's writes to the whole cluster, not only to its own CTA.
(On the CPU executor this module has a stand-in.)
"""

from __future__ import annotations

import cutlass.cute as cute
from cutlass._mlir.dialects import llvm, nvvm


def load(ptr: cute.Pointer, dtype):
    """One value of `dtype` at `ptr`, a pointer made by cute.arch.map_dsmem_ptr."""
    return dtype(llvm.load(dtype.mlir_type, ptr.to_llvm_ptr()))


def arrive(mbar: cute.Pointer, rank):
    """Arrive on the mbarrier at `mbar` in CTA `rank` of the cluster, with release
    semantics at cluster scope (what this thread wrote before is visible to whoever waits)."""
    cute.arch.mbarrier_arrive(mbar, rank, scope=nvvm.MemScopeKind.CLUSTER)
