"""What the notebooks do with a kernel, in one place, so a notebook cell is a call.

Shared by the GEMM notebooks: gemm_lesson (checks over ragged shapes, benchmarks or their
recorded rows, compile reports), gemm_configs (a learner's own configuration), ladder (every
GEMM against cuBLAS, as recorded). One module per notebook topic besides: ceilings_lesson and
vector_add_lesson (00), dsl_basics_lesson (01), layout_lesson (02), tiling_lesson and
timing_rows (03), copies_lesson (04), banks_lesson and bank_measurement (05), mma_lesson (06),
tma_lesson, tma_checks and multicast_lesson (08), pipeline_lesson and stage_sweep_lesson (09),
wgmma_lesson (10), hopper_lesson (11), fp8_lesson (12), tcgen05_lesson and
tcgen05_instructions (14), cta_pair_lesson (15), blockscaled_lesson (16).
"""
