"""The one policy every notebook uses to run a live cell or take its labelled fallback.

A live cell names what it needs (a key of `course.runtime.hardware.NEEDS`), the function
that does the real thing, and a fallback for machines that cannot:

    out = live_or("gpu", measure_ceilings, recorded("ceilings"))

On a machine that can, `measure_ceilings()` runs and the cell is labelled LIVE.
Elsewhere the fallback runs and says exactly what it is:

    executed(fn, what) run the kernel's own code on the course's CPU executor at a small size
                      (values and hazards checked, speed not measured), optionally followed
                      by another fallback (what the compiler made of it)
    compile_only(fn)  compile for the target arch and show what came out (PTX/SASS)
    simulated(fn)     run the course's simulator or functional emulator instead
    recorded(name)    show a result measured earlier, naming GPU, date and command
    recorded_or(name, fallback, command)
                      the recorded result when there is one; else `fallback` (a simulation,
                      a prediction, a compile), its banner saying first that nothing has
                      been recorded yet and which command records it

`live_or_executed(needs, live, run, what, compiled=..., label=...)` is the shape most kernel
cells take: live, else `executed(run, what)` followed by `compile_only(compiled)`.

Given a `label` ("07.sm80_sweep"), a cell that ran live under `python -m course run --record`
keeps what it printed, and a fallback elsewhere shows that text after its own output.

Every choice between a live run, a recorded result and a stand-in is made here, so a
notebook cell never decides for itself what to show.

It never silently skips and never pretends: the banner is printed first, and the
returned `Outcome` carries the mode so later cells can say "measured" or "recorded".
"""

from __future__ import annotations

import enum
import html
from dataclasses import dataclass
from typing import Any, Callable

from course.runtime import live_outputs, results
from course.runtime.hardware import Machine, machine, tiers_for
from kernels.host import COMPILE_TARGET


class Mode(str, enum.Enum):
    LIVE = "live"
    EXECUTED = "executed"
    COMPILE_ONLY = "compile-only"
    SIMULATED = "simulated"
    RECORDED = "recorded"


_STYLE = {  # colour, symbol
    Mode.LIVE: ("#1a7f37", "▶ LIVE"),
    Mode.EXECUTED: ("#bf3989", "▷ EXECUTED ON THE CPU EXECUTOR"),
    Mode.COMPILE_ONLY: ("#9a6700", "⚙ COMPILE-ONLY"),
    Mode.SIMULATED: ("#8250df", "≈ SIMULATED"),
    Mode.RECORDED: ("#0969da", "⏺ RECORDED"),
}


@dataclass(frozen=True)
class Banner:
    """The label printed above a live cell's output."""

    mode: Mode
    text: str

    def __str__(self) -> str:
        return f"[{_STYLE[self.mode][1]}] {self.text}"

    def _repr_html_(self) -> str:
        colour, label = _STYLE[self.mode]
        return (
            f'<div style="border-left:6px solid {colour};padding:4px 10px;'
            f'margin:4px 0;background:{colour}14">'
            f'<b style="color:{colour}">{label}</b> {html.escape(self.text)}</div>'
        )

    def __repr__(self) -> str:
        return str(self)


def show(obj: Any) -> None:
    """display() inside IPython, print() elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(obj)
        return
    if get_ipython() is None:
        print(obj)
    else:
        display(obj)


@dataclass
class Outcome:
    """What a live cell produced, and how (`where`: the machine it ran on)."""

    mode: Mode
    value: Any
    banner: Banner
    record: results.Record | None = None
    where: str = ""

    @property
    def live(self) -> bool:
        return self.mode is Mode.LIVE

    def caption(self, name: str = "", otherwise: str = "") -> str:
        """Where the value came from, for a figure's source line: 'measured now on <this
        machine>' when live, '<name> measured on <GPU> ... by `<command>`' when recorded,
        else `otherwise` (what a simulation or compile stands in for)."""
        if self.live:
            return f"measured now on {self.where}"
        if self.record is not None:
            return f"{name} {self.record.citation()}".strip()
        return otherwise


@dataclass(frozen=True)
class Fallback:
    """What to do on a machine that cannot run the cell live: `run(machine, needs, why,
    announce)`, where `why` is the banner's first sentence (why the cell is not live)."""

    mode: Mode
    run: Callable[[Machine, str, str, Callable[[Banner], None]], Outcome]


def _why_not(m: Machine, needs: str) -> str:
    return f"This cell needs {needs} (tier {tiers_for(needs)}); this machine is {m.describe()}"


def _recorded_outcome(
    rec: results.Record,
    why: str,
    announce: Callable[[Banner], None],
    select: Callable[[results.Record], Any],
) -> Outcome:
    banner = Banner(Mode.RECORDED, f"{why}. Showing the result {rec.citation()}.")
    announce(banner)
    return Outcome(Mode.RECORDED, select(rec), banner, rec)


def recorded(
    name: str,
    gpu: str | None = None,
    select: Callable[[results.Record], Any] = lambda rec: rec.data,
    match: Callable[[results.Record], bool] | None = None,
) -> Fallback:
    """Fall back to the newest recorded result of family `name` (on a `gpu` if given,
    satisfying `match` if given); `select` picks what the cell gets from the record."""

    def run(m: Machine, needs: str, why: str, announce: Callable[[Banner], None]) -> Outcome:
        rec = results.latest(name, gpu=gpu, match=match)
        if rec is None:
            raise LookupError(
                f"no recorded result {name!r}{' on ' + gpu if gpu else ''} in "
                f"{results.RESULTS_DIR}: it must be measured on a GPU and committed"
            )
        return _recorded_outcome(rec, why, announce, select)

    return Fallback(Mode.RECORDED, run)


def recorded_or(
    name: str,
    otherwise: Fallback,
    command: str,
    gpu: str | None = None,
    select: Callable[[results.Record], Any] = lambda rec: rec.data,
    match: Callable[[results.Record], bool] | None = None,
) -> Fallback:
    """The newest recorded result of family `name` when results/<name>.json has one
    (labelled RECORDED, like `recorded`); when nothing has been recorded yet, the fallback
    `otherwise` (a simulation, a prediction, a compile), whose banner first says so and
    names the `command` that would record it: never a made-up measurement, never a
    traceback. The Outcome's mode tells the cell which one it got."""

    def run(m: Machine, needs: str, why: str, announce: Callable[[Banner], None]) -> Outcome:
        rec = results.latest(name, gpu=gpu, match=match)
        if rec is not None:
            return _recorded_outcome(rec, why, announce, select)
        not_yet = (
            f"{why}. No GPU measurement of this has been recorded yet"
            f"{' on ' + gpu if gpu else ''} (it is recorded by `{command}` on a GPU "
            f"into results/{name}.json)"
        )
        return otherwise.run(m, needs, not_yet, announce)

    return Fallback(Mode.RECORDED, run)


def compile_only(compile_for: Callable[[str], Any], arch: str | None = None) -> Fallback:
    """Fall back to compiling for the target arch; `compile_for(arch)` returns artifacts."""

    def run(m: Machine, needs: str, why: str, announce: Callable[[Banner], None]) -> Outcome:
        target = arch or COMPILE_TARGET[needs]
        banner = Banner(
            Mode.COMPILE_ONLY,
            f"{why}. Compiling for {target} instead and "
            f"showing what the compiler produced; nothing "
            f"was launched.",
        )
        announce(banner)
        return Outcome(Mode.COMPILE_ONLY, compile_for(target), banner)

    return Fallback(Mode.COMPILE_ONLY, run)


def executed(run: Callable[[], Any], what: str, then: Fallback | None = None) -> Fallback:
    """Fall back to running `what` -- the kernel's own CuTe DSL code -- on the course's CPU
    executor (course.execute) at a small size: `run()` returns what it observed, printed
    as its `summary()` when it has one, or as is when it is text; anything else (the
    verdicts of a check that printed its own lines as it went) is the Outcome's value,
    not printed again. With `then`, that fallback runs after it (what the compiler made of
    the kernel, say) and its Outcome is the cell's value."""

    def go(m: Machine, needs: str, why: str, announce: Callable[[Banner], None]) -> Outcome:
        banner = Banner(
            Mode.EXECUTED,
            f"{why}. Running {what} on the course's CPU executor "
            f"at a small size instead: the kernel's own code, its "
            f"values and hazards checked against torch; speed is "
            f"not measured.",
        )
        announce(banner)
        value = run()
        summary = getattr(value, "summary", None)
        if callable(summary):
            print(summary())
        elif isinstance(value, str):
            print(value)
        if then is not None:
            return then.run(m, needs, why, announce)
        return Outcome(Mode.EXECUTED, value, banner)

    return Fallback(Mode.EXECUTED, go)


def live_or_executed(
    needs: str,
    live: Callable[[], Any],
    run: Callable[[], Any],
    what: str,
    compiled: Callable[[str], Any] | None = None,
    label: str | None = None,
) -> Outcome:
    """The shape most kernel cells take, so a lesson states only its parts: `live()` on a
    machine that satisfies `needs`; elsewhere `run()` on the CPU executor (`executed(run,
    what)`), then, given `compiled`, what the compiler made of the kernel for the target arch
    (`compile_only(compiled)`), then what the cell printed when it last ran live (`label`)."""
    then = compile_only(compiled) if compiled is not None else None
    return live_or(needs, live, executed(run, what, then=then), label=label)


def simulated(simulate: Callable[[], Any], what: str) -> Fallback:
    """Fall back to a CPU simulator/emulator (or a model's prediction); `what` names it in
    the banner."""

    def run(m: Machine, needs: str, why: str, announce: Callable[[Banner], None]) -> Outcome:
        banner = Banner(Mode.SIMULATED, f"{why}. Running {what} instead.")
        announce(banner)
        return Outcome(Mode.SIMULATED, simulate(), banner)

    return Fallback(Mode.SIMULATED, run)


def compiled_here(needs: str, compile_for: Callable[[str], Any]) -> Outcome:
    """`compile_for(arch)` for this machine's GPU when it satisfies `needs` (LIVE: the code
    that would run here), else for the target arch of `needs` (COMPILE-ONLY)."""
    return live_or(needs, lambda: compile_for(machine().arch), compile_only(compile_for))


# The first words of the banner above a recorded live output (the run report counts
# banners, and this one says what a GPU printed, not what this cell did here).
REPLAY_INTRO = "What this cell printed when it ran live"


def show_recorded_output(label: str, announce: Callable[[Banner], None] = show) -> None:
    """After a fallback: what the live cell `label` printed when it last ran on a GPU,
    under a RECORDED banner naming the GPU, date and command; nothing if never recorded."""
    rec = live_outputs.latest(label)
    if rec is None:
        return
    p = rec.provenance
    announce(
        Banner(
            Mode.RECORDED,
            f"{REPLAY_INTRO} on {p['gpu']} (driver "
            f"{p.get('driver') or '?'}, CUDA {p.get('cuda_runtime') or '?'})"
            f" on {rec.date}, by `{rec.command}`:",
        )
    )
    print(rec.data["text"], end="" if rec.data["text"].endswith("\n") else "\n")


def _run_live(live: Callable[[], Any], label: str | None) -> Any:
    """`live()`; with a `label` while recording is on, also record what it printed."""
    if not (label and live_outputs.recording()):
        return live()
    with live_outputs.teed_stdout() as printed:
        value = live()
    if printed.getvalue():
        live_outputs.record(label, printed.getvalue())
    return value


def live_or(
    needs: str,
    live: Callable[[], Any],
    fallback: Fallback,
    quiet: bool = False,
    label: str | None = None,
) -> Outcome:
    """Run `live()` if this machine satisfies `needs`, else the labelled fallback.

    `label` ("NN.short_name") names the cell's experiment: a live run under
    `python -m course run --record` keeps what it printed, and a fallback shows that
    recorded text after its own output (see course.runtime.live_outputs)."""
    m = machine()
    announce = (lambda banner: None) if quiet else show
    if m.can(needs):
        banner = Banner(Mode.LIVE, f"running now on {m.describe()}.")
        announce(banner)
        return Outcome(Mode.LIVE, _run_live(live, label), banner, where=m.describe())
    out = fallback.run(m, needs, _why_not(m, needs), announce)
    out.where = m.describe()
    if label and not quiet:
        show_recorded_output(label, announce)
    return out
