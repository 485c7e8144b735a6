"""The footprint's parts (what a model holds besides its routed experts), field by field on real configs."""

from __future__ import annotations

from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import PartKind

GIB = 1 << 30


def _parts(model: str):
    desc = resolve_model(model)
    assert desc.footprint is not None
    return desc.footprint


def test_every_part_has_a_kind_and_embeddings_and_head_are_two_parts():
    fp = _parts("deepseek-ai/DeepSeek-V4-Flash")
    by_name = {p.name: p for p in fp.parts}
    emb, head = by_name["embeddings"], by_name["LM head"]
    assert emb.kind is PartKind.EMBEDDING and head.kind is PartKind.HEAD
    assert emb.linear == head.linear == ((1, 129280, 4096),)  # vocab_size x hidden_size, bf16
    assert not fp.tied_embeddings
    assert {p.kind for p in fp.parts} >= {PartKind.ATTENTION, PartKind.ROUTER, PartKind.NORM, PartKind.SHARED_EXPERTS}


def test_bytes_by_kind_sums_to_the_total_the_fit_uses():
    fp = _parts("zai-org/GLM-5-FP8")
    for built in (False, True):
        assert sum(fp.bytes_by_kind(mtp_built=built).values()) == fp.bytes(mtp_built=built)
    assert fp.bytes_by_kind(mtp_built=False)[PartKind.HEAD] == 154880 * 6144 * 2
    assert fp.bytes_by_kind(mtp_built=False)[PartKind.DENSE_MLP] > 0  # first_k_dense_replace = 3


def test_the_split_keeps_the_totals_of_the_fit():
    """Splitting "embeddings and head" and the V4 extras into kinds moved no byte (figures from before the split)."""
    fp = _parts("deepseek-ai/DeepSeek-V4-Flash")
    assert (fp.bytes(mtp_built=False), fp.bytes(mtp_built=True)) == (9012485504, 9180271104)
    fp = _parts("zai-org/GLM-5")
    assert (fp.bytes(mtp_built=False), fp.bytes(mtp_built=True)) == (38271012864, 38849046016)


# --- every family the reader reads, field by field (real fixtures) ---------------------------------------------------

FIX = "tests/fixtures/models/"


def _by_name(model: str) -> dict:
    return {p.name: p for p in _parts(FIX + model).parts}


def test_qwen3_moe_gqa_with_head_qk_norms():
    parts = _by_name("Qwen--Qwen3-30B-A3B")
    att = parts["attention"]
    # q [32*128, 2048], k/v [4*128, 2048], o [2048, 32*128] on 48 layers; q/k RMSNorm over head_dim 128
    assert att.linear == ((48, 4096, 2048), (48, 512, 2048), (48, 512, 2048), (48, 2048, 4096))
    assert att.raw_bytes == 48 * 2 * 2 * 128 and att.fmt.format.value == "bf16"
    assert parts["router"].linear == ((48, 128, 2048),) and parts["router"].raw_bytes == 0  # softmax, no bias
    assert parts["embeddings"].linear == parts["LM head"].linear == ((1, 151936, 2048),)
    assert not any(p.kind is PartKind.SHARED_EXPERTS for p in parts.values())
    fp = _parts(FIX + "Qwen--Qwen3-30B-A3B")
    assert (fp.kv_bytes_per_token, fp.kv_bytes_fixed) == (48 * 2 * 4 * 128 * 2, 0)


def test_the_attention_format_is_the_checkpoints_own():
    """The FP8 Qwen3 checkpoint stores attention in 128x128 FP8 blocks (its quantization_config), the router,
    embeddings and head in bf16; the ModelOpt NVFP4 GLM-5 export keeps attention bf16 (exclude_modules)."""
    parts = _by_name("Qwen--Qwen3-30B-A3B-FP8")
    assert parts["attention"].fmt.format.value == "fp8_block"
    assert parts["LM head"].fmt.format.value == "bf16"
    assert _by_name("nvidia--GLM-5-NVFP4")["attention"].fmt.format.value == "bf16"


def test_qwen3_next_hybrid_layers_gated_attention_and_shared_expert_gate():
    parts = _by_name("Qwen--Qwen3-Next-80B-A3B-Thinking")
    # full attention every 4th layer (12 of 48), q_proj doubled by the output gate: 2 x 16 heads x 256
    assert parts["attention"].linear == ((12, 8192, 2048), (12, 512, 2048), (12, 512, 2048), (12, 2048, 4096))
    lin = parts["linear attention"]  # Gated DeltaNet on the other 36: in_proj_qkvz, out_proj, in_proj_ba
    assert lin.linear == ((36, 2 * 2048 + 2 * 4096, 2048), (36, 2048, 4096), (36, 64, 2048))
    assert lin.raw_bytes == 36 * 2 * ((2 * 2048 + 4096) * 4 + 2 * 32 + 128)  # conv taps, dt_bias, A_log, norm
    shared = parts["shared experts"]  # shared_expert_intermediate_size 512 on all 48 MoE layers
    assert shared.linear == ((48, 512, 2048), (48, 512, 2048), (48, 2048, 512))
    assert parts["shared-expert gate"].linear == ((48, 1, 2048),)
    assert parts["shared-expert gate"].kind is PartKind.SHARED_EXPERT_GATE
    fp = _parts(FIX + "Qwen--Qwen3-Next-80B-A3B-Thinking")
    assert fp.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2  # only full-attention layers cache K/V per token
    state = 2 * (2 * 16 * 128 + 32 * 128) * 3 + 2 * 32 * 128 * 128  # conv window + delta-rule state (bf16)
    assert fp.kv_bytes_fixed == 36 * state
    assert any("mtp_num_hidden_layers" in n for n in fp.notes)  # its config states no MTP layer count
    assert not _parts(FIX + "Qwen--Qwen3.5-397B-A17B").notes  # it does: counted, nothing to say


def test_qwen3_5_mtp_layer_vision_tower_and_fp8_kv():
    fp = _parts(FIX + "nvidia--Qwen3.5-397B-A17B-NVFP4")
    parts = {p.name: p for p in fp.parts}
    mtp = parts["MTP routed experts"]  # mtp_num_hidden_layers 1, 512 experts, bf16 (the export excludes mtp.*)
    assert mtp.mtp and mtp.kind is PartKind.ROUTED_EXPERTS
    assert mtp.raw_bytes == 512 * 3 * 4096 * 1024 * 2
    assert parts["MTP input projection"].linear == ((1, 4096, 8192),)
    vision = parts["vision tower"]
    assert vision.kind is PartKind.VISION and 0.4e9 < vision.params < 0.5e9  # the 27-block, 1152-wide ViT
    assert fp.kv_bytes_per_token == 15 * 2 * 2 * 256 * 1  # kv_cache_scheme: 8-bit float
    assert fp.bytes(mtp_built=True) - fp.bytes(mtp_built=False) > mtp.bytes


def test_gpt_oss_biases_sinks_and_sliding_window():
    fp = _parts(FIX + "openai--gpt-oss-120b")
    parts = {p.name: p for p in fp.parts}
    att = parts["attention"]  # 64 q heads, 8 kv heads of 64; q/k/v and o biases, one sink per head
    assert att.linear == ((36, 4096, 2880), (36, 512, 2880), (36, 512, 2880), (36, 2880, 4096))
    assert att.raw_bytes == 36 * 2 * ((4096 + 2 * 512) + 2880 + 64)
    assert parts["router"].raw_bytes == 36 * 2 * 128  # a bf16 bias per expert
    assert parts["routed-expert biases"].raw_bytes == 2 * 36 * 128 * (2 * 2880 + 2880)
    # alternating layer_types: 18 full layers per token, 18 sliding layers hold at most 128 tokens
    assert fp.kv_bytes_per_token == 18 * 2 * 8 * 64 * 2
    assert fp.kv_bytes_fixed == 18 * 128 * 2 * 8 * 64 * 2


def test_llama4_dense_interleave_shared_expert_and_chunked_layers():
    fp = _parts(FIX + "meta-llama--Llama-4-Maverick-17B-128E-Instruct")
    parts = {p.name: p for p in fp.parts}
    # interleave_moe_layer_step 2: 24 MoE layers with a shared expert of intermediate_size 8192,
    # 24 dense layers of intermediate_size_mlp 16384
    assert parts["dense MLP layers"].linear == ((48, 16384, 5120), (24, 5120, 16384))
    assert parts["shared experts"].linear == ((24, 8192, 5120), (24, 8192, 5120), (24, 5120, 8192))
    assert fp.kv_bytes_per_token == 48 * 2 * 8 * 128 * 2 and "chunked" in fp.kv_formula


def test_mixtral_minimax_glm4_kimi_entries():
    mixtral = _by_name("mistralai--Mixtral-8x7B-v0.1")
    assert mixtral["attention"].linear == ((32, 4096, 4096), (32, 1024, 4096), (32, 1024, 4096), (32, 4096, 4096))
    assert mixtral["attention"].raw_bytes == 0
    minimax = _parts(FIX + "MiniMaxAI--MiniMax-M2.5")
    att = next(p for p in minimax.parts if p.name == "attention")
    assert att.raw_bytes == 62 * 2 * (48 * 128 + 8 * 128)  # q/k RMSNorm over all heads (per_layer)
    assert att.fmt.format.value == "fp8_block" and minimax.notes  # MTP modules not released: said so
    air = _by_name("reconstructed--GLM-4.5-Air")
    assert air["attention"].raw_bytes == 46 * 2 * (96 * 128 + 2 * 8 * 128)  # q/k/v biases, no q/k norm
    assert air["MTP shared experts"].mtp and air["dense MLP layers"].linear[0] == (2, 10944, 4096)
    kimi = _parts(FIX + "moonshotai--Kimi-K2-Instruct")
    assert kimi.kv_bytes_per_token == 61 * 2 * (512 + 64)  # MLA latent
    assert any("vision" in n for n in _parts(FIX + "moonshotai--Kimi-K2.5").notes)  # MoonViT: named, not counted
    assert _parts(FIX + "trimmed--GLM-4.7-Flash").kv_bytes_per_token == 47 * 2 * (512 + 64)


def test_families_without_an_entry_get_no_footprint():
    for model in ("moonshotai--Kimi-K3",):  # Nemotron-H and Gemma-4 have entries now
        assert resolve_model(FIX + model).footprint is None, model


def test_kv_per_token_mla_and_deepseek_v4():
    assert _parts("zai-org/GLM-5").kv_bytes_per_token == 78 * (2 * (512 + 64) + 128 + 4)  # latent + indexer key
    fp = _parts("deepseek-ai/DeepSeek-V4-Flash")
    assert fp.kv_bytes_per_token == 3959 and fp.kv_bytes_fixed == 43 * 128 * 604  # compressed + windows


def test_qwen2_moe_on_qwen15_moe_a27b_values():
    """Qwen1.5-MoE-A2.7B's config values (as public test suites quote its config.json; no verbatim copy is
    committed): the Qwen2-MoE entry weighs q/k/v biases, the 5632-wide shared expert and its gate, and the total
    lands on the card's 14.3B parameters."""
    from moe_oracle.model.adapters import describe_config
    from tests.model.model_test_helpers import QWEN15_MOE_A2_7B

    config = {**QWEN15_MOE_A2_7B, "tie_word_embeddings": False}
    desc = describe_config(config)
    fp = desc.footprint
    assert fp is not None
    parts = {p.name: p for p in fp.parts}
    assert parts["attention"].raw_bytes == 24 * 2 * (3 * 2048)  # q/k/v biases, MHA 16 x 128
    assert parts["shared experts"].linear == ((24, 5632, 2048), (24, 5632, 2048), (24, 2048, 5632))
    assert parts["shared-expert gate"].linear == ((24, 1, 2048),)
    experts = 24 * 60 * 3 * 2048 * 1408
    assert abs((experts + fp.params()) / 14.3e9 - 1) < 0.01
