"""The runs in progress and the kernel launches inside them: `launch` is what a kernel's
`.launch(...)` does on the executor (course.execute.api's KernelCall); course.execute.runner's
`run` pushes its Result on `_ACTIVE` while its host function runs, and pops it after.

Below api (which calls `launch`) and above the machine and the units whose checks run when a
CTA exits (`AT_EXIT`): a new unit that leaves work behind at exit adds its check there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from course.execute import machine, tcgen05, tma, tmem
from course.execute.hazards import Unmodelled
from course.execute.memory import SharedMemory

# what each CTA's exit checks: a TMA store whose bulk group no wait_group retired, a
# tcgen05.commit's arrival never waited on, TMEM still allocated
AT_EXIT = (tma.finish, tcgen05.at_exit, tmem.at_exit)


@dataclass
class Launched:
    grid: tuple
    block: tuple
    smems: list[SharedMemory]
    cancelled: list = field(default_factory=list)  # clusters CLC cancelled (their index)
    notes: list = field(default_factory=list)  # hazards.Note, each once


_ACTIVE: list = []  # the runner.Result of each run() in progress, innermost last


def running() -> bool:
    """True while run() runs a host function (its kernel code, the oracle's CuTe calls)."""
    return bool(_ACTIVE)


def launch(fn, grid, block, cluster=(1, 1, 1)) -> None:
    """A kernel's .launch(...) inside run(): the grid (in clusters), now."""
    if not _ACTIVE:
        raise Unmodelled("a kernel launch outside course.execute.run")
    result = _ACTIVE[-1]
    options = machine.Options(result.seed, result.count_banks)
    grid_launch = machine.Launch(fn, (), grid, block, options, cluster, AT_EXIT)
    grid_launch.run()
    result.launches.append(
        Launched(
            grid_launch.grid,
            grid_launch.block,
            grid_launch.smems,
            grid_launch.cancelled,
            grid_launch.notes,
        )
    )
