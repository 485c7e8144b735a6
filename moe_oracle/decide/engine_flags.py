"""The engine settings a question carries, checked against the engine's own rules before anything is decided.

``--all2all-backend``: vLLM's ``All2AllBackend`` values (``engines/vllm/flags.py`` ALL2ALL_CHOICES, checked
against the wheel); SGLang has no such setting (its ``--moe-a2a-backend`` is what the plan sets for the chosen
backend), so a value given with ``--engine sglang`` is refused rather than recorded and never emitted.

The decode batch against the per-rank step budget (``--max-num-seqs`` / ``--decode-tokens`` and
``--max-num-batched-tokens``):

* Any engine: a typed decode batch larger than the per-rank step budget is refused. A decode step of N
  sequences feeds N tokens per rank to each MoE layer, and the ranking and the symmetric buffers are sized for
  at most the budget; weighing it at the budget instead would be a silent clamp.
* vLLM: a typed ``--max-num-batched-tokens`` below ``max_num_seqs`` (given, or vLLM's default for the device)
  is refused as vLLM refuses it at start (``SchedulerConfig``: "max_num_batched_tokens ... must be greater
  than or equal to max_num_seqs", vllm 0.33.0 config/scheduler.py#L331-L335).
"""

from __future__ import annotations

from moe_oracle.errors import DeploymentError, Fix, FixKind
from moe_oracle.model.types import ModelDescription
from moe_oracle.releases import sglang as sglang_release
from moe_oracle.releases import vllm as vllm_release
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment

VLLM_BUDGET_RULE = f"{vllm_release.SOURCE}/config/scheduler.py#L331-L335"

#: The decode batch per rank when neither ``--decode-tokens`` nor ``--max-num-seqs`` is given (here, not in
#: :mod:`moe_oracle.decide.asked`, which imports this module: no import circle).
DEFAULT_DECODE_TOKENS = 32


def check_step_batch(
    engine: Engine, deployment: Deployment, max_num_seqs: int | None, decode_tokens: int, *, budget_given: bool
) -> None:
    """Exit 2 for a decode batch the step budget cannot hold, or a vLLM budget vLLM refuses (see the module)."""
    from moe_oracle.decide.memory_share import vllm_serve_batch_defaults

    budget = deployment.parallel.max_num_batched_tokens
    typed = max_num_seqs is not None or decode_tokens != DEFAULT_DECODE_TOKENS
    flag = "--decode-tokens" if decode_tokens != (max_num_seqs or DEFAULT_DECODE_TOKENS) else "--max-num-seqs"
    if typed and decode_tokens > budget:
        raise DeploymentError(
            f"{flag} {decode_tokens} is more than the per-rank step budget (--max-num-batched-tokens {budget}): a "
            f"decode step of {decode_tokens} sequences feeds {decode_tokens} tokens per rank to every MoE layer, "
            "more than the ranking and the buffers are sized for",
            fixes=(
                Fix(FixKind.FLAG, "or less", ((flag, str(budget)),)),
                Fix(FixKind.FLAG, "or more", (("--max-num-batched-tokens", str(decode_tokens)),)),
            ),
        )
    if engine is not Engine.VLLM or not budget_given:
        return
    seqs = max_num_seqs if max_num_seqs is not None else vllm_serve_batch_defaults(deployment.device.name)[1]
    if budget < seqs:
        where = (
            "--max-num-seqs" if max_num_seqs is not None else f"vLLM's default max_num_seqs on {deployment.device.name}"
        )
        raise DeploymentError(
            f"--max-num-batched-tokens {budget} is less than {where} ({seqs}): vLLM refuses a step budget below "
            f"max_num_seqs at start ({VLLM_BUDGET_RULE})",
            fixes=(
                Fix(FixKind.FLAG, "or more", (("--max-num-batched-tokens", str(seqs)),)),
                Fix(FixKind.FLAG, "or fewer", (("--max-num-seqs", str(budget)),)),
            ),
        )


def check_all2all(engine: Engine, value: str | None) -> None:
    """Exit 2 for an ``--all2all-backend`` the engine does not take (see the module)."""
    from moe_oracle.errors import BadInputError, excerpt

    vllm_flags = vllm_release.flags

    if value is None:
        return
    if engine is Engine.SGLANG:
        raise BadInputError(
            f"--all2all-backend {excerpt(value)} is vLLM's setting: SGLang {sglang_release.VERSION} has no "
            "--all2all-backend, and its "
            "--moe-a2a-backend is what the plan sets for the chosen backend",
            fix="drop --all2all-backend with --engine sglang (choose the MoE backend with --moe-backend NAME)",
        )
    if value not in vllm_flags.ALL2ALL_CHOICES:
        raise BadInputError(
            f"--all2all-backend {excerpt(value)} is not one of vLLM {vllm_release.VERSION}'s all2all backends",
            fix=f"use one of {', '.join(vllm_flags.ALL2ALL_CHOICES)}, or drop --all2all-backend",
        )


def check_context(model: ModelDescription, max_model_len: int | None) -> None:
    """Exit 2 for a ``--max-model-len`` longer than the model's context (its config's ``max_position_embeddings``
    as the footprint reads it): vLLM refuses it at start (``ModelConfig``'s derived max_model_len check) and the
    fit would count a KV cache for tokens the model cannot attend to."""
    context = model.footprint.max_context if model.footprint is not None else None
    if max_model_len is None or context is None or max_model_len <= context:
        return
    raise DeploymentError(
        f"--max-model-len {max_model_len} is longer than {model.model}'s context ({context:,} tokens, its config's "
        "max_position_embeddings): the engine refuses a longer one at start",
        fixes=(
            Fix(FixKind.FLAG, "or less", (("--max-model-len", str(context)),)),
            Fix(FixKind.FLAG, "(the model's context)", dropped=(("--max-model-len", str(max_model_len)),)),
        ),
    )
