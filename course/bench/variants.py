"""A kernel configuration named on the command line: a preset, or a preset with fields replaced.

    'block_staged'                       the preset itself
    'block_staged:tile_n=192'            the preset with tile_n = 192
    'block_overlapped:overlap_group=8,cluster_m=1'

Values are Python literals (a bare word is a string). A preset that does not exist, a field the
Config lacks, or a rule its __post_init__ enforces is refused here with a ValueError, before a
benchmark or a sanitizer run spends any GPU time on it.
"""

from __future__ import annotations

import ast
import dataclasses


def parse(spec: str, presets: dict, default: str | None = None) -> tuple[str, object]:
    """(the spec's name, its Config); `default` is the preset a spec without 'PRESET:' edits."""
    if ":" in spec:
        base, fields = spec.split(":", 1)
    elif spec in presets or default is None:
        base, fields = spec, ""
    else:
        base, fields = default, spec
    if base not in presets:
        raise ValueError(f"{spec!r}: no preset {base!r} (one of {sorted(presets)})")
    changes = {}
    for item in filter(None, fields.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"{spec!r}: {item!r} is not FIELD=VALUE")
        try:
            changes[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            changes[key.strip()] = value.strip()  # a bare word: a string field's value
    try:
        config = dataclasses.replace(presets[base], **changes)
    except TypeError as e:  # a field the Config does not have
        raise ValueError(f"{spec!r}: {e}") from None
    return (f"{base}:{fields}" if fields else base), config
