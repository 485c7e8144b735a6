"""Options shared by the planning commands, so a flag means the same everywhere."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import click

from moe_oracle.cli.command import FiniteFloat
from moe_oracle.cli.manual_options import description_from, no_manual_flags
from moe_oracle.errors import BadInputError, excerpt
from moe_oracle.inputs import ENGINE_RELEASE_PROFILE, RELEVANT_ENV, DeploymentFlags
from moe_oracle.shell import ENV_NAME

_POS = click.IntRange(min=1)
#: The largest decode batch a flag takes: the largest per-rank token budget (spec/deployment.py, 2^24).
MAX_BATCH = 1 << 24
#: The largest ``--max-model-len`` taken (tokens); the model's own context bounds it further.
MAX_CONTEXT_FLAG = 1 << 30


def _apply(f: Callable[..., Any], opts: list[Callable[..., Any]]) -> Callable[..., Any]:
    """``f`` with ``opts`` applied so that ``--help`` lists them in the order given."""
    for opt in reversed(opts):
        f = opt(f)
    return f


def _complete_device(ctx: Any, param: Any, incomplete: str) -> list[str]:
    """Shell completion of --device: the catalogue's names and ``local``."""
    from moe_oracle.spec.device import DEVICES

    return [name for name in (*sorted(DEVICES), "local") if name.startswith(incomplete.lower())]


def _device_option() -> list[Callable[..., Any]]:
    return [
        click.option(
            "--device",
            default=None,
            shell_complete=_complete_device,
            help="Device name (h100, h200, b200, b300, gb200, mi355x, ...) or local.",
        )
    ]


def _machine_options() -> list[Callable[..., Any]]:
    """The machine's shape besides the GPU count: node size and NVLink/XGMI domain."""
    return [
        click.option("--gpus-per-node", type=_POS, default=None, help="GPUs per node [device default]."),
        click.option(
            "--domain-size", type=_POS, default=None, help="NVLink/XGMI domain size in GPUs [device default]."
        ),
    ]


#: The layout flags' default, as ``--help`` states it.
_LAYOUT_DEFAULT = (
    "[1 when another layout flag is given; with no --tp/--dp/--ep/--pp the oracle proposes the layout: "
    "DP+EP over every GPU given, and says why]"
)


def _layout_options() -> list[Callable[..., Any]]:
    """The parallel layout (none given: the oracle proposes one), native and engine spellings."""
    return [
        click.option("--nodes", type=_POS, default=1, show_default=True, help="Number of nodes."),
        click.option("--tp", type=_POS, default=1, help=f"Tensor-parallel size (attention) {_LAYOUT_DEFAULT}."),
        click.option("--dp", type=_POS, default=1, help=f"Data-parallel size (attention) {_LAYOUT_DEFAULT}."),
        click.option("--ep", type=_POS, default=1, help=f"Expert-parallel group size (1 = no EP) {_LAYOUT_DEFAULT}."),
        click.option("--pp", type=_POS, default=1, help=f"Pipeline-parallel size {_LAYOUT_DEFAULT}."),
        *ENGINE_SPELLINGS,
    ]


def _runtime_options() -> list[Callable[..., Any]]:
    """What the engine runs with besides the layout: step budget, all2all, EPLB, speculative decoding, env."""
    return [
        click.option(
            "--max-num-batched-tokens",
            type=_POS,
            default=8192,
            show_default=True,
            help="Token budget per step per DP rank.",
        ),
        click.option("--all2all-backend", default=None, help="Engine all2all backend (e.g. mori_high_throughput)."),
        click.option("--eplb/--no-eplb", default=False, show_default=True, help="Expert-parallel load balancing."),
        click.option(
            "--speculative",
            default="none",
            show_default=True,
            metavar="mtp|none",
            help="Speculative decoding with the model's own MTP layers. none is the engines' default: the MTP "
            "layers are not built, so they neither decide the backend nor take memory; mtp builds them (the plan "
            "adds the engine's speculative flags).",
        ),
        click.option(
            "--env",
            "env_items",
            multiple=True,
            metavar="KEY=VALUE",
            help=f"Environment the engine will see (default: this shell's {', '.join(RELEVANT_ENV[:2])}, ...).",
        ),
    ]


def deployment_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--device``, the machine, the layout (and the engines' spellings of it) and the runtime flags."""
    return _apply(f, [*_device_option(), *_machine_options(), *_layout_options(), *_runtime_options()])


#: The engines' own spellings of the layout flags, so a deployment can be pasted from a serve command.
ENGINE_SPELLINGS = [
    click.option("--tensor-parallel-size", "-tp", "alias_tp", type=_POS, default=None, help="vLLM's spelling of --tp."),
    click.option("--data-parallel-size", "-dp", "alias_dp", type=_POS, default=None, help="vLLM's spelling of --dp."),
    click.option(
        "--pipeline-parallel-size", "-pp", "alias_pp", type=_POS, default=None, help="vLLM's spelling of --pp."
    ),
    click.option(
        "--enable-expert-parallel",
        "alias_enable_ep",
        is_flag=True,
        default=False,
        help="vLLM's expert parallelism: EP over all TP x DP ranks (--ep tp*dp).",
    ),
    click.option(
        "--tp-size",
        "sgl_tp",
        type=_POS,
        default=None,
        help="SGLang's model group size, tp*dp (with --attn-dp-size/--dp-size as the attention DP).",
    ),
    click.option(
        "--attn-dp-size",
        "--dp-size",
        "sgl_dp",
        type=_POS,
        default=None,
        help="SGLang's attention data parallelism (--dp-size as with --enable-dp-attention): --dp.",
    ),
    click.option("--ep-size", "sgl_ep", type=_POS, default=None, help="SGLang's spelling of --ep."),
]


def _given(name: str) -> bool:
    """True when the option ``name`` was typed on the command line (not its default)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    return ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE


def _alias(kw: dict[str, Any], native: str, value: int | None, spelled: str, set_by: dict[str, str]) -> None:
    """Apply an engine spelling to the native option ``native``; a different value given both ways is exit 2."""
    if value is None:
        return
    previous = set_by.get(native) or (f"--{native}" if _given(native) else None)
    if previous is not None and kw[native] != value:
        raise BadInputError(
            f"{spelled} {value} contradicts {previous} {kw[native]} (both set the {native.upper()} size)",
            fix="give the size once, with either spelling",
        )
    kw[native] = value
    set_by.setdefault(native, spelled)


def resolve_engine_spellings(kw: dict[str, Any]) -> None:
    """Fold vLLM's spellings (``-tp``, ``--data-parallel-size``, ``--enable-expert-parallel``, ...) and
    SGLang's (``--tp-size``, ``--attn-dp-size``, ``--ep-size``) into ``tp``/``dp``/``pp``/``ep`` (pops them).

    vLLM: EP with ``--enable-expert-parallel`` spans all ``tp x dp`` ranks. SGLang: ``--tp-size`` is the
    whole model group (``tp * dp``) and ``--attn-dp-size`` its attention DP, so ``tp = tp_size / attn_dp``.
    """
    set_by: dict[str, str] = {}
    _alias(kw, "tp", kw.pop("alias_tp", None), "--tensor-parallel-size", set_by)
    _alias(kw, "dp", kw.pop("alias_dp", None), "--data-parallel-size", set_by)
    _alias(kw, "pp", kw.pop("alias_pp", None), "--pipeline-parallel-size", set_by)
    sgl_tp, sgl_dp, sgl_ep = kw.pop("sgl_tp", None), kw.pop("sgl_dp", None), kw.pop("sgl_ep", None)
    _alias(kw, "dp", sgl_dp, "--attn-dp-size", set_by)
    if sgl_tp is not None:
        attn_dp = kw["dp"]
        if sgl_tp % attn_dp:
            raise BadInputError(
                f"--tp-size {sgl_tp} is not a multiple of the attention DP size {attn_dp} (SGLang's --tp-size is "
                "the whole model group, tp*dp)",
                fix=f"use --tp-size {attn_dp * max(1, sgl_tp // attn_dp)} or another multiple of {attn_dp}",
            )
        _alias(kw, "tp", sgl_tp // attn_dp, "--tp-size", set_by)
    _alias(kw, "ep", sgl_ep, "--ep-size", set_by)
    if kw.pop("alias_enable_ep", False):
        _alias(kw, "ep", kw["tp"] * kw["dp"], "--enable-expert-parallel (tp*dp)", set_by)


def flags_from(kw: dict[str, Any]) -> DeploymentFlags:
    """The :class:`DeploymentFlags` of the parsed options (pops them; engine spellings folded in). A flag the
    command does not take keeps its default (the matrix has no ``--device``: its axis sets it per cell)."""
    resolve_engine_spellings(kw)
    values = {f.name: kw.pop(f.name) for f in fields(DeploymentFlags) if f.name in kw}
    return DeploymentFlags(**{"device": "", **values})


def options_from(kw: dict[str, Any]) -> Any:
    """The :class:`~moe_oracle.decide.asked.QuestionOptions` of the parsed options (pops them): environment,
    override (where the command takes one), advisories, workload, conversions, decode batch, memory share."""
    from moe_oracle.cost.local import use_file
    from moe_oracle.decide.asked import QuestionOptions

    use_file(kw.pop("calibration", None))  # read now: a bad file is one line before anything is decided
    env = env_from(kw.pop("env_items"))
    conversion = conversion_from(kw)
    return QuestionOptions(
        env=env,
        override=kw.pop("moe_backend", None),
        allow_fallback=kw.pop("allow_fallback", False),
        advisories_file=kw.pop("advisories"),
        conversion=conversion,
        workload=kw.pop("workload"),
        max_num_seqs=kw.get("max_num_seqs"),
        max_model_len=kw.pop("max_model_len", None),
        decode_tokens=decode_tokens_from(kw),
        memory_fraction=kw.pop("memory_fraction"),
        budget_given=_given("max_num_batched_tokens"),
    )


def env_from(items: tuple[str, ...]) -> dict[str, str]:
    """Relevant variables from this shell, overridden by explicit ``--env KEY=VALUE``."""
    env = {k: os.environ[k] for k in RELEVANT_ENV if k in os.environ}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not ENV_NAME.fullmatch(key):
            raise click.BadParameter(
                f"{excerpt(item)} is not KEY=VALUE with KEY a shell variable name (letters, digits, _)",
                param_hint="--env",
            )
        env[key] = value
    return env


def low_precision_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--allow-low-precision-activations``: let automatic selection pick a lower accuracy class."""
    return click.option(
        "--allow-low-precision-activations",
        is_flag=True,
        help="Let automatic selection choose a variant that quantizes activations to 4 bits (accuracy class a4) "
        "for a checkpoint whose activations are not 4-bit (e.g. aiter a4w4 for MXFP4 experts).",
    )(f)


#: The parameters that set a parallel layout (native and engine spellings): none given means "propose one".
LAYOUT_PARAMS = (
    "tp",
    "dp",
    "ep",
    "pp",
    "alias_tp",
    "alias_dp",
    "alias_pp",
    "alias_enable_ep",
    "sgl_tp",
    "sgl_dp",
    "sgl_ep",
)


def layout_given() -> bool:
    """True when any layout flag was typed (explicit layouts are judged as given)."""
    return any(_given(name) for name in LAYOUT_PARAMS)


def _software_option() -> list[Callable[..., Any]]:
    return [
        click.option(
            "--software",
            default=None,
            help="Software profile [default: installed for --device local; the engine release with moe-oracle's "
            f"plug-in ({', '.join(ENGINE_RELEASE_PROFILE.values())}; on SM90 with the one DeepGEMM build the chosen "
            "variant needs in place of the release's: +sgl-deep-gemm, +pr323) for --engine vllm/sglang; all (every "
            "known kernel build) otherwise].",
        )
    ]


def _override_options() -> list[Callable[..., Any]]:
    return [
        click.option(
            "--moe-backend",
            "moe_backend",
            default=None,
            help="Explicit backend NAME[:VARIANT]; refused (exit 3) if it cannot run.",
        ),
        click.option("--allow-fallback", is_flag=True, help="Let a refused --moe-backend fall back, with a warning."),
    ]


def _weighing_options() -> list[Callable[..., Any]]:
    """What the decision weighs besides model, deployment and software: advisories, workload, conversions,
    the decode batch and the engine's memory share."""
    return [
        click.option(
            "--advisories", type=click.Path(dir_okay=False), default=None, help="Extra known-bad advisory file."
        ),
        click.option(
            "--workload",
            default="mixed",
            show_default=True,
            help="Tokens per rank the ranking weighs: decode, prefill, mixed, or a histogram T:w,T:w,...; append "
            "@skew=S for skewed routing (the busiest rank sets the cost; S as moe-oracle tune --skew).",
        ),
        click.option(
            "--calibration",
            default=None,
            metavar="FILE|none",
            help="Kernel times measured by moe-oracle tune [default: this machine's file for the device, when it "
            "was measured through the builds of --software; none: the package's calibration only].",
        ),
        click.option("--no-convert", is_flag=True, help="Forbid load-time conversion of the routed experts."),
        click.option(
            "--allow-lossy-conversion",
            is_flag=True,
            help="Allow a conversion that changes the model's numerics (e.g. BF16 -> FP8, or SGLang's online NVFP4 "
            "quantization of FP8 experts, --quantization modelopt_fp4); check it with moe-oracle accuracy.",
        ),
        click.option(
            "--decode-tokens",
            type=click.IntRange(min=1, max=MAX_BATCH),
            default=None,
            help="Decode batch per rank [default: --max-num-seqs, else 32].",
        ),
        click.option(
            "--max-num-seqs",
            type=click.IntRange(min=1, max=MAX_BATCH),
            default=None,
            help="The engine's max sequences per DP rank (vLLM/SGLang max_num_seqs): the decode batch per rank.",
        ),
        click.option(
            "--max-model-len",
            type=click.IntRange(min=1, max=MAX_CONTEXT_FLAG),
            default=None,
            help="The longest sequence the engine serves, in tokens (vLLM --max-model-len, SGLang --context-length; "
            "the plan passes it on) [the model's context; a plan whose KV cache holds less sets what it holds].",
        ),
        click.option(
            "--memory-fraction",
            type=FiniteFloat(min=0.05, max=1.0),
            default=None,
            help="The engine's memory share of a GPU for the fit (vLLM --gpu-memory-utilization, SGLang "
            "--mem-fraction-static) [the engine's default as the fit assumes it; the fit prints the share it used].",
        ),
    ]


def question_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every deciding command (select, plan, serve, compare) takes, with the same defaults."""
    opts = [
        *_software_option(),
        *_override_options(),
        *_weighing_options(),
        click.option("--all-reasons", is_flag=True, help="List every reason of every candidate."),
    ]
    return low_precision_option(_apply(f, opts))


def matrix_question_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``select``'s options for what the matrix's axes (--models, --devices, --topologies, --engine,
    --software) leave open: the same names, defaults and validation, so a cell is ``select``'s answer to
    that cell's question. Left out: the layout (a topology sets it), ``--moe-backend`` (the matrix judges
    every variant) and ``--all-reasons`` (json and html carry every reason)."""
    return low_precision_option(_apply(f, [*_machine_options(), *_runtime_options(), *_weighing_options()]))


#: Options of ``select`` that the matrix replaces by its axes or leaves out (see :func:`matrix_question_options`).
NOT_MATRIX_OPTIONS = frozenset(
    {"device", "nodes", "tp", "dp", "ep", "pp", "software", "moe_backend", "allow_fallback", "all_reasons"}
    | {"alias_tp", "alias_dp", "alias_pp", "alias_enable_ep", "sgl_tp", "sgl_dp", "sgl_ep"}
)


def conversion_from(kw: dict[str, Any]) -> Any:
    """The :class:`ConversionOptions` of ``--no-convert``/``--allow-lossy-conversion``/``--allow-low-precision-...``."""
    from moe_oracle.decide.question import ConversionOptions

    no_convert, allow_lossy = kw.pop("no_convert"), kw.pop("allow_lossy_conversion")
    if no_convert and allow_lossy:
        raise BadInputError(
            "--no-convert contradicts --allow-lossy-conversion (no conversion at all vs. lossy ones allowed)",
            fix="keep one of the two flags",
        )
    return ConversionOptions(
        enabled=not no_convert,
        allow_lossy=allow_lossy,
        allow_low_precision_activations=kw.pop("allow_low_precision_activations"),
    )


def decode_tokens_from(kw: dict[str, Any]) -> int:
    """``--decode-tokens``, else ``--max-num-seqs``, else :data:`DEFAULT_DECODE_TOKENS` (pops both)."""
    from moe_oracle.decide.asked import DEFAULT_DECODE_TOKENS

    max_num_seqs = kw.pop("max_num_seqs")
    return kw.pop("decode_tokens") or max_num_seqs or DEFAULT_DECODE_TOKENS


def asked_from(model: str | None, kw: dict[str, Any], command: str, engine: Any, description: Any = None) -> Any:
    """The :class:`~moe_oracle.decide.asked.AskedQuestion` of a deciding command's options (pops them): the one
    reading of MODEL or the manual flags, the deployment, software, override, workload, conversion and memory
    flags for ``select``, ``plan``, ``serve`` and ``compare``. With no layout flag, the layout the oracle proposes
    for the GPUs given (:func:`moe_oracle.decide.layout.propose_layout`), with its reason. ``description``: the
    model already read (``moe_oracle.select(ModelDescription, ...)``), instead of MODEL or the manual flags."""
    from moe_oracle.decide.asked import AskedQuestion
    from moe_oracle.inputs import check_engine_software

    if kw.get("device") is None:
        raise BadInputError(f"{command} needs --device", fix="e.g. --device b200, --device mi355x or --device local")
    software = kw.pop("software")
    check_engine_software(engine.value, software)
    options = options_from(kw)
    proposed = not layout_given()
    flags = flags_from(kw)
    if description is None:
        description = description_from(model, kw, command)
    else:
        no_manual_flags(kw, description)
    layout_why = None
    if proposed:
        from moe_oracle.decide.layout import propose_layout

        proposal = propose_layout(description, flags, engine, memory_fraction=options.memory_fraction)
        flags, layout_why = proposal.flags, proposal.why
    return AskedQuestion(
        model=description,
        flags=flags,
        engine=engine,
        software=software,
        options=options,
        layout_why=layout_why,
    )
