"""Stable reason codes. Every rejection carries one; docs and tests key on them."""

from __future__ import annotations

from enum import Enum


class ReasonCode(str, Enum):
    ARCH_UNSUPPORTED = "ARCH_UNSUPPORTED"
    KERNEL_MISSING = "KERNEL_MISSING"
    LIBRARY_VERSION = "LIBRARY_VERSION"
    QUANT_UNSUPPORTED = "QUANT_UNSUPPORTED"
    SHAPE_UNSUPPORTED = "SHAPE_UNSUPPORTED"
    TOPK_UNSUPPORTED = "TOPK_UNSUPPORTED"
    EXPERTS_NOT_DIVISIBLE = "EXPERTS_NOT_DIVISIBLE"
    EXPERTS_EXCEED_LIMIT = "EXPERTS_EXCEED_LIMIT"
    TP_UNSUPPORTED = "TP_UNSUPPORTED"
    PP_UNSUPPORTED = "PP_UNSUPPORTED"
    EP_REQUIRED = "EP_REQUIRED"
    EP_EXCEEDS_DOMAIN = "EP_EXCEEDS_DOMAIN"
    EP_SIZE_UNSUPPORTED = "EP_SIZE_UNSUPPORTED"
    EPLB_UNSUPPORTED = "EPLB_UNSUPPORTED"
    ALL2ALL_UNSUPPORTED = "ALL2ALL_UNSUPPORTED"
    ACTIVATION_UNSUPPORTED = "ACTIVATION_UNSUPPORTED"
    ROUTING_UNSUPPORTED = "ROUTING_UNSUPPORTED"
    TOKENS_UNSUPPORTED = "TOKENS_UNSUPPORTED"
    HEAP_TOO_SMALL = "HEAP_TOO_SMALL"
    MEMORY_EXCEEDED = "MEMORY_EXCEEDED"
    DEPLOYMENT_MEMORY_EXCEEDED = "DEPLOYMENT_MEMORY_EXCEEDED"
    KV_CACHE_TOO_SMALL = "KV_CACHE_TOO_SMALL"
    CONVERSION_LOSSY = "CONVERSION_LOSSY"
    ENGINE_UNSUPPORTED = "ENGINE_UNSUPPORTED"
    MODEL_CLASS_UNSUPPORTED = "MODEL_CLASS_UNSUPPORTED"
    KNOWN_BAD = "KNOWN_BAD"
    EXPERT_BIAS_UNSUPPORTED = "EXPERT_BIAS_UNSUPPORTED"
    EXPERT_WIDTH_EXCEEDS = "EXPERT_WIDTH_EXCEEDS"
    ROUTER_WEIGHT_ON_INPUT = "ROUTER_WEIGHT_ON_INPUT"
    SHARED_EXPERT_GATED = "SHARED_EXPERT_GATED"
    QUANT_INTEGER = "QUANT_INTEGER"

    @property
    def meaning(self) -> str:
        return _MEANING[self]


_MEANING: dict[ReasonCode, str] = {
    ReasonCode.ARCH_UNSUPPORTED: "The kernel is not built for this GPU architecture.",
    ReasonCode.KERNEL_MISSING: "The installed (or profiled) library lacks the kernel's entry points.",
    ReasonCode.LIBRARY_VERSION: "The library is present but its version is outside the supported range.",
    ReasonCode.QUANT_UNSUPPORTED: "The routed-expert weight format is not one the kernel consumes.",
    ReasonCode.SHAPE_UNSUPPORTED: "Hidden or intermediate size breaks an alignment or size limit.",
    ReasonCode.TOPK_UNSUPPORTED: "Top-k (plus fused shared experts) exceeds the kernel's limit.",
    ReasonCode.EXPERTS_NOT_DIVISIBLE: "The expert count does not divide evenly over the EP ranks.",
    ReasonCode.EXPERTS_EXCEED_LIMIT: "Too many experts in total or per rank for the kernel's signal layout.",
    ReasonCode.TP_UNSUPPORTED: "Experts would be tensor-parallel sharded; mega-MoE kernels are EP-only.",
    ReasonCode.PP_UNSUPPORTED: "Pipeline parallelism is not supported on this path.",
    ReasonCode.EP_REQUIRED: "The path needs expert parallelism enabled.",
    ReasonCode.EP_EXCEEDS_DOMAIN: "The EP group crosses an NVLink/XGMI domain or exceeds the rank cap.",
    ReasonCode.EP_SIZE_UNSUPPORTED: "The kernel runs only at specific EP sizes.",
    ReasonCode.EPLB_UNSUPPORTED: "Expert-parallel load balancing (redundant experts) is not supported.",
    ReasonCode.ALL2ALL_UNSUPPORTED: "The all2all backend setting is incompatible with this path.",
    ReasonCode.ACTIVATION_UNSUPPORTED: "The expert activation (kind or clamp) is not implemented.",
    ReasonCode.ROUTING_UNSUPPORTED: "The engine's mega path does not implement this routing method.",
    ReasonCode.TOKENS_UNSUPPORTED: "The per-rank token capacity breaks the kernel's rule.",
    ReasonCode.HEAP_TOO_SMALL: "The symmetric heap configured is smaller than the kernel needs.",
    ReasonCode.MEMORY_EXCEEDED: "Converted expert weights would not fit per rank with room for the KV cache.",
    ReasonCode.DEPLOYMENT_MEMORY_EXCEEDED: (
        "One rank's weights, symmetric buffers and runtime reserve exceed the engine's memory share of a GPU "
        "(or leave too little KV cache to serve)."
    ),
    ReasonCode.KV_CACHE_TOO_SMALL: "The KV cache left per rank holds less than the model's context for one sequence.",
    ReasonCode.CONVERSION_LOSSY: "A load-time format conversion would change the model's numerics (needs opt-in).",
    ReasonCode.ENGINE_UNSUPPORTED: "The target engine version has no code path for this backend here.",
    ReasonCode.MODEL_CLASS_UNSUPPORTED: (
        "The engine's MoE block for this model class never calls this path: the engine accepts the flag and "
        "runs its regular MoE."
    ),
    ReasonCode.KNOWN_BAD: "A published advisory says this combination gives wrong results.",
    ReasonCode.EXPERT_BIAS_UNSUPPORTED: "The routed experts carry bias vectors (gpt-oss); no mega-MoE kernel takes a "
    "bias operand.",
    ReasonCode.EXPERT_WIDTH_EXCEEDS: "One expert's width I exceeds the kernel's cap (SM90 mega-MoE: I <= 4096, one "
    "bit per 64-wide block in a uint64 mask).",
    ReasonCode.ROUTER_WEIGHT_ON_INPUT: "The routing weight scales the expert input (Llama-4); the kernels apply it to "
    "the output, which is equal only for top-1 with the input pre-scaled.",
    ReasonCode.SHARED_EXPERT_GATED: "A per-token gate scales the shared expert (Qwen), so it cannot be fused into the "
    "routed kernel as a unit-weight expert; it runs outside the kernel, which blocks only such a fusion.",
    ReasonCode.QUANT_INTEGER: "The routed experts are INT4/INT8 (compressed-tensors, AWQ, GPTQ); no mega-MoE kernel "
    "consumes integer weights.",
}
