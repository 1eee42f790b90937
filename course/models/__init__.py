"""Pure-Python models of the hardware and of CuTe's algebra: layouts and swizzles,
banks, coalescing, tensor maps, descriptors, tile order, ownership, the mbarrier, and the
published (datasheet) ceilings of the GPUs the course records on.
No GPU, no CuTe DSL, no pictures: everything else in the course builds on these."""
