"""Notebook 08's tensor maps: what TMA saves over cp.async, encoding a map with the driver
(or checking the driver's rules in Python), the maps the driver refuses, CuTe DSL's
version of the same map, and the swizzle TMA applies.

  copy_instructions      copy instructions per k-tile: cp.async against TMA
  encode_for_real        encode a map with the CUDA driver (live)
  check_rules            the driver's rules checked by the model (fallback)
  print_rejections       argument sets the driver refuses, and why
  print_cute_tensor_map  what CuTe DSL builds for the same tensor
  compare_with_driver    CuTe's descriptor bytes against the driver's (live)
  descriptor_ptx         how the descriptor reaches the kernel, in PTX (fallback)
  print_swizzle_agreement  CuTe's swizzle against the model, per mode
  encoded_map            section 2's cell: the driver encodes, else its rules (a live cell)
  descriptor_bytes       section 3's cell: CuTe's bytes against the driver's (a live cell)
"""

from __future__ import annotations

import torch

from course.models import tensormap
from course.runtime.live import Outcome, compile_only, live_or, simulated

# argument sets the driver refuses, one rule each (bf16 unless said)
REJECTED = [
    ("100 x 100 bf16: rows of 200 bytes", tensormap.tiled(100, 100)),
    ("base address off by 8 bytes", tensormap.tiled(64, 64, address=0x1008)),
    ("a 64 x 128 bf16 box with the 128B swizzle", tensormap.tiled(64, 256, box=(64, 128))),
    ("a 300-element box", tensormap.tiled(64, 512, box=(64, 300), swizzle=0)),
]


def copy_instructions(cfg, elem_bytes: int = 2) -> dict[str, int]:
    """Print what one k-tile of an SM80 GEMM configuration `cfg` costs in copy instructions:
    16-byte cp.async copies, one per thread per instruction (a warp's instruction moves 32 of
    them), against TMA's one box of A and one of B, issued by one thread."""
    tile_bytes = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * elem_bytes
    cp_async = tile_bytes // 16  # 16-byte copies, one per thread and instruction
    warp_instructions = cp_async // 32  # what the warps issue: 32 copies each
    print(
        f"one k-tile of a {cfg.tile_m}x{cfg.tile_n} CTA tile, K = {cfg.tile_k}: "
        f"{tile_bytes:,} bytes of A and B (bf16)"
    )
    print(
        f"  cp.async, 16 B per thread: {cp_async:,} copies, {cp_async // cfg.threads} per "
        f"thread, each to an address its thread computed; issued as {warp_instructions:,} "
        f"warp instructions ({cfg.threads // 32} warps x {cp_async // cfg.threads})"
    )
    print(
        f"  TMA: 2 instructions (one box of A, one of B) from one thread, "
        f"{warp_instructions // 2}x fewer than the warps issue; the TMA unit computes the "
        "addresses"
    )
    return {
        "bytes": tile_bytes,
        "cp.async": cp_async,
        "warp instructions": warp_instructions,
        "tma": 2,
    }


def encode_for_real(rows: int = 8192, cols: int = 8192) -> bytes:
    """Encode the example's map for a real (rows, cols) bf16 tensor with the CUDA driver and
    print its 128 opaque bytes (needs a GPU)."""
    x = torch.empty(rows, cols, dtype=torch.bfloat16, device="cuda")
    args = tensormap.for_tensor(x)  # the example's arguments, with x's real address
    data = tensormap.encode(args)
    print(f"globalAddress 0x{args.global_address:x}: {len(data)} bytes")
    print(tensormap.hexdump(data))
    return data


def check_rules(args: tensormap.TensorMapArgs) -> list[str]:
    """Try to encode `args` (saying why it cannot here) and check the driver's documented
    rules in Python; returns the rules it breaks."""
    print(tensormap.try_encode(args))
    bad = tensormap.rule_violations(args)
    print(
        "the driver's documented rules, checked in Python: "
        + ("all satisfied" if not bad else "; ".join(bad))
    )
    return bad


def print_rejections(cases=REJECTED) -> None:
    """Each (label, args) and every rule of the driver's that it breaks."""
    for label, args in cases:
        print(f"{label}:")
        for why in tensormap.rule_violations(args):
            print(f"    {why}")


def print_cute_tensor_map(
    rows: int = 8192, cols: int = 8192, dtype: torch.dtype = torch.bfloat16
) -> dict[str, str]:
    """CuTe DSL's layouts, copy atom and TMA tensor for a (rows, cols) tensor, indented."""
    from course.cute import kernel_traces

    built = kernel_traces.cute_tensor_map(rows, cols, dtype)
    for what, text in built.items():
        print(f"{what}:\n    " + text.replace("\n", "\n    "))
    return built


def compare_with_driver(rows: int = 8192, cols: int = 8192) -> tensormap.MapComparison:
    """The tensor map CuTe built for a real tensor, read against the driver's encodings of
    the same arguments with every L2 promotion and OOB fill (needs a GPU)."""
    from kernels import tma

    x = torch.empty(rows, cols, dtype=torch.bfloat16, device="cuda")
    cute_bytes = tma.descriptor(x)
    print(f"CuTe's tensor map (first {len(cute_bytes)} bytes, what copy_tensormap copies):")
    print(tensormap.hexdump(cute_bytes))
    found = tensormap.compare_with_encodings(cute_bytes, tensormap.encode, tensormap.for_tensor(x))
    print_map_comparison(found)
    return found


def print_map_comparison(found: tensormap.MapComparison) -> None:
    """Which driver encoding CuTe's map is nearest, the bits that differ and whose they are,
    and the verdict: do the bytes that describe the tensor and the box agree?"""
    near = found.nearest
    print(
        f"nearest driver encoding: L2 promotion {near.l2_promotion}, OOB fill {near.oob_fill}: "
        + ("identical" if found.identical else f"{len(found.differing)} bit(s) differ")
    )
    for byte, bit in found.differing:
        whose = found.owner.get((byte, bit))
        print(
            f"  byte {byte} bit {bit}: "
            + (
                f"a bit of the driver's {whose} setting"
                if whose
                else "no argument of cuTensorMapEncodeTiled changes it"
            )
        )
    own = sorted({byte for byte, bit in found.differing if (byte, bit) not in found.owner})
    if found.same_tensor_and_box:
        verdict = (
            "passed: the same map as the driver's with these settings"
            if found.identical
            else "passed: the maps differ only in bits of the driver's own settings"
        )
    else:
        verdict = (
            f"{len(found.differing) - len(found.owner)} of the differing bit(s), in "
            f"byte(s) {own}, no setting of the driver's produces: CuTe encodes something "
            "of its own there; every other bit agrees or belongs to a setting"
        )
    print(f"check: {verdict}")


def descriptor_ptx(arch: str):
    """How the 128-byte descriptor reaches the kernel: the kernel parameter, and the PTX
    that copies it."""
    from kernels import tma

    art = tma.artifacts(arch, "descriptor")
    print("\n".join(line for line in art.ptx.splitlines() if "param_0[128]" in line))
    print("\n".join("    " + line for line in art.ptx_lines(r"ld\.param\.v2|st\.global")))
    return art


def print_swizzle_agreement(swizzles=(0, 32, 64, 128), nbytes: int = 2048) -> dict[int, bool]:
    """For each swizzle mode: whether CuTe's Swizzle and course.models.tensormap put every
    16-byte chunk of `nbytes` in the same place, and the XOR mask of rows 0-7 of box rows
    as wide as the mode's span (TMA refuses wider rows for the 32B and 64B modes): row r's
    chunk c lands in slot c ^ mask[r]."""
    from course.cute import kernel_traces

    agree = {}
    for swizzle in swizzles:
        cute_says = kernel_traces.cute_swizzle_offsets(swizzle, nbytes)
        model = [tensormap.swizzle_byte_offset(b, swizzle) for b in range(0, nbytes, 16)]
        agree[swizzle] = cute_says == model
        row = swizzle or 128  # the widest row the mode takes
        masks = [cute_says[row // 16 * r] % row // 16 for r in range(8)]
        print(
            f"{swizzle:3d}B swizzle: CuTe and the model agree on all {len(model)} chunks: "
            f"{cute_says == model};  rows 0-7 of {row}-byte rows XOR their chunk with {masks}"
        )
    return agree


def encoded_map(args: tensormap.TensorMapArgs) -> Outcome:
    """Section 2's cell. On an sm_90+ GPU (a driver to call): the driver encodes the map of a
    real 8192 x 8192 tensor (`encode_for_real`). Elsewhere (simulated): `args` checked against
    the driver's documented rules in Python, nothing encoded; then the recorded GPU output
    (label 08.encode)."""
    return live_or(
        "sm_90+",
        encode_for_real,
        simulated(
            lambda: check_rules(args),
            "course.models.tensormap's check of the driver's rules (no driver here to encode with)",
        ),
        label="08.encode",
    )


def descriptor_bytes() -> Outcome:
    """Section 3's cell. On an sm_90+ GPU: CuTe DSL's descriptor bytes read against the
    driver's (`compare_with_driver`). Elsewhere compile-only: the descriptor-copy kernel
    compiled for sm_90a (`descriptor_ptx`), then the recorded GPU output (08.descriptor)."""
    return live_or(
        "sm_90+", compare_with_driver, compile_only(descriptor_ptx), label="08.descriptor"
    )
