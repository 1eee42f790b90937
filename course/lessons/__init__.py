"""What the notebooks do with a kernel, in one place, so a notebook cell is a call.

Shared by the GEMM notebooks: gemm_lesson (checks over ragged shapes, benchmarks or their
recorded rows, compile reports), gemm_configs (a learner's own configuration), ladder (every
GEMM against cuBLAS, as recorded). One module per notebook topic besides: ceilings_lesson and
vector_add_lesson (00), layout_lesson (01), tiling_lesson (02), copies_lesson (03),
banks_lesson and bank_measurement (04), mma_lesson (05), tma_lesson, tma_checks and
multicast_lesson (07), pipeline_lesson and stage_sweep_lesson (08), wgmma_lesson (09),
hopper_lesson (10), tcgen05_lesson and tcgen05_instructions (11), cta_pair_lesson (12).
"""
