"""Error types and the CLI exit codes they map to.

Every user-facing failure is one of these: a single line naming the value, the rule it broke
and the fix. The CLI prints ``error: <message>`` to stderr and exits with ``exit_code``;
nothing here ever surfaces as a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum, IntEnum


class ExitCode(IntEnum):
    """Documented exit codes of the ``moe-oracle`` CLI."""

    OK = 0
    INTERNAL = 1
    BAD_INPUT = 2
    OVERRIDE_REFUSED = 3
    ENGINE_FAILED = 4
    REPLAY_MISMATCH = 5
    STALE = 6  # ``--check``: a generated file would change
    DOES_NOT_FIT = 7  # the deployment's weights and buffers do not fit the engine's memory share (select/plan/serve)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), the shells' convention


#: The most characters of one input value an error line echoes (the value is cut in the middle beyond it).
EXCERPT_CHARS = 80


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """A bounded, single-line echo of an input value for an error line: its ``repr`` (quotes, escapes for
    control characters, newlines and lone surrogates), cut to ``limit`` characters as ``head...tail (N
    characters)`` when longer, so that a 100 kB argument never becomes a 100 kB error line."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    keep = max(limit - 3, 8)
    return text[: keep - keep // 3] + "..." + text[len(text) - keep // 3 :] + size


#: The most characters of an error line's message and of its fix; a single word longer than
#: :data:`EXCERPT_CHARS` (an input echoed whole) is cut in the middle first.
MAX_MESSAGE_CHARS = 1500
MAX_FIX_CHARS = 600


def bounded_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), each overlong word cut to a bounded excerpt and the
    whole cut to ``limit`` characters with a count of the rest: the safety net under every error line."""
    words = []
    for word in text.split():
        if len(word) > 2 * EXCERPT_CHARS:
            word = f"{word[: EXCERPT_CHARS - 10]}...{word[-20:]} ({len(word)} characters)"
        words.append(word)
    line = " ".join(words)
    if len(line) > limit:
        line = f"{line[: limit - 40].rstrip()} ... ({len(line) - limit + 40} more characters)"
    return line


class FixKind(Enum):
    """What a typed fix changes (issue 32 item 1): the engine's memory settings, the layout or GPU count, the
    checkpoint's format, the software profile, the engine, another flag, or a change by hand (prose only)."""

    FIT = "fit"
    LAYOUT = "layout"
    FORMAT = "format"
    PROFILE = "profile"
    ENGINE = "engine"
    FLAG = "flag"
    MANUAL = "manual"


@dataclass(frozen=True)
class Fix:
    """One alternative a refusal offers, typed where the refusal is decided, so that it can be re-planned as given
    (:mod:`moe_oracle.launch.fix_judge`) and is rendered to text once (:meth:`render`).

    ``flags``: ``(flag, value)`` pairs the alternative sets, as the command takes them (a layout's pairs are the
    whole layout); ``dropped``: given ``(flag, value)`` pairs it leaves out; ``model``: another checkpoint to serve
    (a FORMAT fix); ``lead``: the alternative's label (``more GPUs``); ``words``: what follows the flags (its fit,
    or what a re-plan gave)."""

    kind: FixKind
    words: str = ""
    flags: tuple[tuple[str, str], ...] = ()
    dropped: tuple[tuple[str, str], ...] = ()
    model: str | None = None
    lead: str = ""

    def flag_words(self) -> str:
        """The flags as one pasteable run of shell words (each value shell-quoted)."""
        from moe_oracle.shell import shell_join

        return shell_join([w for pair in self.flags for w in pair])

    def render(self) -> str:
        """The alternative as printed: ``lead: without A and B, FLAGS MODEL WORDS``."""
        from moe_oracle.shell import shell_join, shell_quote

        parts = []
        if self.dropped:
            without = " and ".join(shell_join(pair) for pair in self.dropped)
            parts.append(f"without {without}{',' if self.flags else ''}")
        if self.flags:
            parts.append(self.flag_words())
        if self.model is not None:
            parts.append(shell_quote(self.model))
        if self.words:
            parts.append(self.words)
        text = " ".join(parts)
        return f"{self.lead}: {text}" if self.lead else text


def render_fixes(fixes: Sequence[Fix]) -> str:
    """Alternatives as one fix line, joined by ``; or ``."""
    return "; or ".join(f.render() for f in fixes)


class OracleError(Exception):
    """Base class: a failure with a one-line message and an exit code."""

    exit_code: ExitCode = ExitCode.INTERNAL
    #: More of the one ``--json`` error document (``serve``: the plan the failure refers to).
    document: dict[str, object] | None = None
    #: True when the command's one ``--json`` document is already on stdout (no error document follows it).
    document_written: bool = False

    def __init__(self, message: str, *, fix: str | None = None, fixes: Sequence[Fix] = ()) -> None:
        self.message = message
        #: the typed alternatives, where the refusal types them (the fit refusal, the engine's layout checks, EP
        #: beyond the experts); ``fix`` is their text when not given
        self.fixes: tuple[Fix, ...] = tuple(fixes)
        self.fix = fix if fix is not None or not self.fixes else render_fixes(self.fixes)
        super().__init__(self.one_line())

    @property
    def code(self) -> str:
        """A stable name for the kind of failure (the exit code's name: ``BAD_INPUT``, ``OVERRIDE_REFUSED``,
        ``DOES_NOT_FIT``, ...), for a caller of the Python API that branches on it."""
        return self.exit_code.name

    def one_line(self) -> str:
        text = bounded_line(self.message, MAX_MESSAGE_CHARS)
        if self.fix:
            # the fix starts a sentence of its own, so that it reads apart from the message it follows
            text += f"{'' if text.endswith(('.', '!', '?')) else '.'} Fix: {bounded_line(self.fix, MAX_FIX_CHARS)}"
        return text


class BadInputError(OracleError):
    """Malformed config, unknown model or device, impossible topology, invalid flag value."""

    exit_code = ExitCode.BAD_INPUT


class EngineLayoutError(BadInputError):
    """A layout the engine itself refuses for this model (its config check, or an assertion while building it)."""


class ModelConfigError(BadInputError):
    """A model config that cannot be read or contradicts itself."""


class UnknownModelError(BadInputError):
    """A model id that is neither a bundled preset, a local directory nor a cached Hub id."""


class UnsupportedArchitectureError(BadInputError):
    """A config whose architecture no adapter understands. ``manual_words``: the manual flags the nearest
    family's reader reads from it (:mod:`moe_oracle.model.adapters.nearest`), for a command-line fix that
    describes the model by hand; ``source``: MODEL as given (the checkpoint the engine would load)."""

    manual_words: tuple[str, ...] = ()
    source: str = ""


class DeploymentError(BadInputError):
    """An invalid or impossible deployment (device, topology, parallelism)."""


class DeploymentDoesNotFitError(BadInputError):
    """A deployment whose weights, buffers and runtime reserve do not fit one GPU's memory share (exit 7, the same
    line from select, plan and serve; compare marks the column instead)."""

    exit_code = ExitCode.DOES_NOT_FIT


class OverrideRefusedError(OracleError):
    """An explicit ``--moe-backend`` that cannot run on this deployment: a short line per layer group in the
    message, every reason with its fix in ``trail`` (``select --all-reasons`` prints it)."""

    exit_code = ExitCode.OVERRIDE_REFUSED

    def __init__(
        self, message: str, *, fix: str | None = None, trail: tuple[str, ...] = (), fixes: Sequence[Fix] = ()
    ) -> None:
        self.trail = trail
        super().__init__(message, fix=fix, fixes=fixes)
