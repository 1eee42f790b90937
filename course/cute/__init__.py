"""The one bridge that runs CuTe DSL on a CPU, and what it reads off the kernels.

trace                 on_cpu(job, arch=..., pointers=...): the only way the course traces
                      CuTe DSL (no compile, no launch), with results converted to Python
algebra               CuTe's layout algebra on course.models.layout values
partition_ownership   who owns which cell: partitions of coordinate tensors, as pairs or
                      course.models.ownership.Ownership
tiled_copy            a TiledCopy's ownership map (notebook 04's 16x8 copy)
kernel_traces         the kernels' own pieces evaluated on a CPU (thread trace, ownership
                      maps, tensor-map description, TMEM epilogue map)
layout_agreement      random layouts for checking course.models.layout against CuTe
"""
