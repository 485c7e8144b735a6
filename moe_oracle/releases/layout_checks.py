"""The engines' own checks of a model against its layout, made before a plan: what makes vLLM 0.33.0 or SGLang
0.5.23 refuse the config or assert while building the model, read from their wheels.

- Attention heads over the attention tensor-parallel group (moe-oracle's ``tp``: vLLM's
  ``--tensor-parallel-size``; SGLang's ``attn_tp_size = --tp-size / --attn-dp-size``): vLLM raises in
  ``vllm/config/model.py:1557-1564``; SGLang asserts in each model's attention (MLA:
  ``models/deepseek_v2.py:2057``; GQA: ``models/qwen3_moe.py:506``, ``glm4_moe.py:237``, ``llama4.py:224``,
  ``mixtral.py:139``, ``qwen2_moe.py:914``).
- KV heads (not MLA): either ``tp % kv_heads == 0`` (replicated) or ``kv_heads % tp == 0`` (partitioned): vLLM's
  ``QKVParallelLinear`` (``model_executor/layers/linear.py:1064-1071``, ``divide`` asserts), SGLang's attention
  (``qwen3_moe.py:509-516`` and the same lines of the other GQA models).
- Routed experts over the EP group (SGLang): ``layers/moe/fused_moe_triton/layer.py:414`` asserts
  ``num_global_routed % ep_size == 0``. vLLM 0.33 places a remainder of experts unevenly and does not refuse.

Torch-free; the facts are data (:data:`_SOURCES`), the checks one function each.
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.errors import Fix, FixKind
from moe_oracle.model.types import ModelDescription
from moe_oracle.releases import sglang, vllm
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment

_VLLM_SRC = vllm.SOURCE
SGLANG_SRC = sglang.SOURCE

#: (engine, check) -> (what the engine does, where)
_SOURCES: dict[tuple[Engine, str], str] = {
    (
        Engine.VLLM,
        "heads",
    ): f"vLLM {vllm.VERSION} refuses the config at start: 'Total number of attention heads ({{heads}}) must "
    f"be divisible by tensor parallel size ({{tp}}).' "
    f"({_VLLM_SRC}/config/model.py#L1557-L1564)",
    (
        Engine.VLLM,
        "kv_heads",
    ): f"vLLM {vllm.VERSION}'s QKVParallelLinear divides them (an assertion while the model is built; "
    f"{_VLLM_SRC}/model_executor/layers/linear.py#L1064-L1071)",
    (
        Engine.SGLANG,
        "heads",
    ): f"SGLang {sglang.VERSION} asserts total_num_heads % attn_tp_size == 0 while building the model "
    f"({SGLANG_SRC}/srt/models/qwen3_moe.py#L506, the same assertion in glm4_moe.py:237, llama4.py:224, "
    "mixtral.py:139, qwen2_moe.py:914)",
    (
        Engine.SGLANG,
        "mla_heads",
    ): f"SGLang {sglang.VERSION} asserts num_heads % attn_tp_size == 0 while building the MLA "
    f"attention ({SGLANG_SRC}/srt/models/deepseek_v2.py#L2057, which the DeepSeek, Kimi and GLM-4.7-Flash models use)",
    (Engine.SGLANG, "kv_heads"): f"SGLang {sglang.VERSION} asserts it while building the attention "
    f"({SGLANG_SRC}/srt/models/qwen3_moe.py#L509-L516)",
    (
        Engine.SGLANG,
        "experts",
    ): f"SGLang {sglang.VERSION}'s FusedMoE asserts num_global_routed % ep_size == 0 while building the "
    f"model ({SGLANG_SRC}/srt/layers/moe/fused_moe_triton/layer.py#L414)",
}

_TP_WORD = {Engine.VLLM: "--tensor-parallel-size", Engine.SGLANG: "attn_tp_size (--tp-size / --attn-dp-size)"}


@dataclass(frozen=True)
class LayoutProblem:
    """One engine check the layout breaks: ``message`` with the values and the rule, ``source`` the engine's line,
    ``fix`` layouts with the same GPUs that pass every check (moe-oracle flags)."""

    check: str
    message: str
    source: str
    fix: str
    #: the same alternatives typed, for a judge that re-plans each (:mod:`moe_oracle.launch.fix_judge`)
    fixes: tuple[Fix, ...] = ()


def _tp_ok(tp: int, model: ModelDescription) -> bool:
    att = model.attention
    if att is None:
        return True
    if att.heads % tp:
        return False
    kv = att.kv_heads
    return kv is None or (tp % kv == 0 if tp >= kv else kv % tp == 0)


def _layouts_that_pass(model: ModelDescription, deployment: Deployment) -> tuple[str, tuple[Fix, ...]]:
    """``--tp T --dp D`` layouts over the same ranks whose ``T`` passes the head checks (largest T first), then
    attention data parallel alone: the fix's text and the layouts typed."""
    par = deployment.parallel
    group = par.tp * par.dp
    options: list[tuple[tuple[str, str], ...]] = [
        (("--tp", str(t)), ("--dp", str(group // t)), *((("--ep", str(group)),) if par.ep > 1 else ()))
        for t in range(par.tp - 1, 1, -1)
        if group % t == 0 and _tp_ok(t, model)
    ][:2]
    options.append((("--tp", "1"), ("--dp", str(group)), ("--ep", str(group))))
    fixes = tuple(Fix(FixKind.LAYOUT, flags=flags) for flags in options)
    text = "use " + ", or ".join(f.flag_words() for f in fixes)
    return text + " (moe-oracle plan proposes a layout when no --tp/--dp/--ep is given)", fixes


def layout_problems(engine: Engine, model: ModelDescription, deployment: Deployment) -> list[LayoutProblem]:
    """The checks of ``engine`` the model breaks on ``deployment``'s layout (empty: the engine builds it, as far as
    these checks go; also for an engine without such checks, or a model whose config gives no head counts)."""
    if engine not in _TP_WORD:
        return []
    par = deployment.parallel
    att = model.attention
    out: list[LayoutProblem] = []
    name = model.model
    if att is not None and att.heads % par.tp:
        out.append(
            LayoutProblem(
                "heads",
                f"--tp {par.tp}: {name} has {att.heads} attention heads ({att.source}), which {engine.value}'s "
                f"{_TP_WORD[engine]} of {par.tp} must divide: {att.heads} % {par.tp} = {att.heads % par.tp}",
                _SOURCES.get((engine, "mla_heads" if att.mla else "heads"), _SOURCES[(engine, "heads")]).format(
                    heads=att.heads, tp=par.tp
                ),
                *_layouts_that_pass(model, deployment),
            )
        )
    elif att is not None and att.kv_heads is not None and not _tp_ok(par.tp, model):
        kv = att.kv_heads
        out.append(
            LayoutProblem(
                "kv_heads",
                f"--tp {par.tp}: {name} has {kv} KV heads ({att.source}); {engine.value} needs --tp to divide them or "
                f"be a multiple of them ({kv} % {par.tp} = {kv % par.tp}, {par.tp} % {kv} = {par.tp % kv})",
                _SOURCES[(engine, "kv_heads")],
                *_layouts_that_pass(model, deployment),
            )
        )
    if engine is Engine.SGLANG and par.ep > 1:
        for group in model.layer_groups:
            if group.num_experts % par.ep:
                divisors = [n for n in range(par.ep - 1, 0, -1) if group.num_experts % n == 0 and n > 1]
                fix = f"use an --ep that divides {group.num_experts}" + (
                    f" (e.g. --ep {divisors[0]} with --tp/--dp to match)" if divisors else ""
                )
                out.append(
                    LayoutProblem(
                        "experts",
                        f"--ep {par.ep}: layer group {group.name} has {group.num_experts} routed experts, which "
                        f"SGLang spreads evenly over the EP group: {group.num_experts} % {par.ep} = "
                        f"{group.num_experts % par.ep}",
                        _SOURCES[(engine, "experts")],
                        fix + ".",
                        tuple(
                            Fix(FixKind.LAYOUT, flags=(("--tp", str(par.tp)), ("--dp", str(par.dp)), ("--ep", str(d))))
                            for d in divisors[:1]
                        ),
                    )
                )
                break
    return out
