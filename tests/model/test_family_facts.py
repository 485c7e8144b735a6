"""Family facts agree: every family the model reader reads has a footprint entry or is declared unweighed, and
every architecture it reads is in each engine's model-class table or declared there as unlisted (issue #28
item 5). A new family (or architecture) added to one table and not the others fails here."""

from __future__ import annotations

from moe_oracle.model.adapters import catalog
from moe_oracle.model.footprint import ATTENTION_KINDS, UNWEIGHED, unweighed_note
from moe_oracle.model.resolve import resolve_model
from moe_oracle.releases import RELEASES

#: Each engine's model-class table (its release's).
TABLES = {r.engine.value: r.model_classes for r in RELEASES.values()}


def _families() -> dict[str, tuple[set[str], set[str]]]:
    """``family -> (architectures, model types)`` as the reader's catalogue reads them."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for arch, rules in catalog.ARCHITECTURES.items():
        out.setdefault(rules.family, (set(), set()))[0].add(arch)
    for model_type, rules in catalog.MODEL_TYPES.items():
        out.setdefault(rules.family, (set(), set()))[1].add(model_type)
    return out


def _weighed(model_types: set[str]) -> bool:
    return any(t in ATTENTION_KINDS or f"{t}_text" in ATTENTION_KINDS for t in model_types)


def test_every_family_is_weighed_or_declared_unweighed() -> None:
    families = _families()
    for family, (_, types) in sorted(families.items()):
        weighed = _weighed(types)
        assert weighed or family in UNWEIGHED, f"{family}: no footprint entry and not in footprint.UNWEIGHED"
        assert not (weighed and family in UNWEIGHED), f"{family}: has a footprint entry but is declared unweighed"
    assert set(UNWEIGHED) <= set(families), "UNWEIGHED names families the reader does not read: " + ", ".join(
        sorted(set(UNWEIGHED) - set(families))
    )


def test_every_footprint_entry_is_a_model_type_the_reader_reads() -> None:
    read = {t for _, types in _families().values() for t in types}
    read |= {f"{t}_text" for t in read}
    unknown = sorted(set(ATTENTION_KINDS) - read)
    assert not unknown, f"footprint entries for model types the reader does not read: {unknown}"


def test_every_architecture_is_in_each_engine_table_or_declared_unlisted() -> None:
    for engine, table in TABLES.items():
        listed = {a for row in table.rows for a in row.architectures}
        unlisted = table.unlisted
        for family, (archs, _) in sorted(_families().items()):
            for arch in sorted(archs):
                assert arch in listed or arch in unlisted, (
                    f"{family}: {arch} is read by the model reader but unknown to the {engine} model-class table "
                    "(add a row with its source line, or declare it in its release's model_classes.UNLISTED)"
                )
        stale = sorted(a for a in unlisted if a in listed)
        assert not stale, f"{engine}: UNLISTED names architectures the table lists: {stale}"
        read = {a for archs, _ in _families().values() for a in archs}
        assert set(unlisted) <= read, f"{engine}: UNLISTED names architectures the reader does not read"


def test_an_unlisted_architecture_gets_its_sentence_not_a_mega_claim() -> None:
    for table in TABLES.values():
        for arch in table.unlisted:
            assert table.find(arch) is None
            why = table.why_no_mega(arch)
            assert arch in why and "not in moe-oracle's table" not in why


def test_the_named_families_without_a_full_fit_say_what_is_left_out() -> None:
    """The families #28 names, read from their public configs: the fit's note lists the weights it leaves out."""
    for source in (
        "tests/fixtures/models/XiaomiMiMo--MiMo-V2-Flash",
        "tests/fixtures/models/MiniMaxAI--MiniMax-M3",
        "tests/fixtures/models/google--gemma-4-26B-A4B",
        "tests/fixtures/models/poolside--Laguna-XS.2-FP8",
        "tests/fixtures/models/nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "tests/fixtures/models/moonshotai--Kimi-K3",
        "tests/fixtures/models/reconstructed--DeepSeek-V4.1-Flash",
    ):
        desc = resolve_model(source)
        if desc.footprint is not None:
            continue  # weighed in full
        note = unweighed_note(desc)
        assert UNWEIGHED.get(desc.family), source
        assert note.startswith("not weighed: attention") and "the router" in note and "the KV cache" in note
        assert f"no footprint entry weighs {desc.family} ({UNWEIGHED[desc.family]})" in note


def test_laguna_is_weighed_in_full_as_vllm_builds_it() -> None:
    """Laguna-XS.2 (vLLM 0.33 laguna.py): q/k/v/o plus a per-head g_proj for each layer's own head count (10 full
    layers of 48 heads, 30 sliding ones of 64), q/k norms, one dense layer, a shared expert per MoE layer, the
    fp32 score-correction bias, untied embeddings; KV on the full layers (fp8: the checkpoint's kv_cache_scheme)
    and a 512-token window on the sliding ones."""
    desc = resolve_model("tests/fixtures/models/poolside--Laguna-XS.2-FP8")
    fp = desc.footprint
    assert fp is not None and "laguna.py" in fp.source
    parts = {p.name: p for p in fp.parts}
    h, d, kv = 2048, 128, 8
    attention = set(parts["attention"].linear)
    for layers, heads in ((10, 48), (30, 64)):
        assert {
            (layers, heads * d, h),
            (layers, kv * d, h),
            (layers, h, heads * d),
            (layers, heads, h),
        } <= attention
    assert parts["attention"].raw_bytes == 40 * 2 * 2 * d  # q_norm and k_norm, bf16
    assert parts["attention"].fmt.label() == "bf16"  # q/k/v/o/g_proj are in the quantization config's ignore list
    assert parts["router"].linear == ((39, 256, h),) and parts["router"].raw_bytes == 39 * 256 * 4
    assert parts["dense MLP layers"].linear == ((2, 8192, h), (1, h, 8192))
    assert parts["shared experts"].linear == ((39, 512, h), (39, 512, h), (39, h, 512))
    assert "LM head" in parts and parts["embeddings"].linear == ((1, 100352, h),)
    assert fp.kv_bytes_per_token == 10 * 2 * kv * d * 1
    assert fp.kv_bytes_fixed == 30 * 512 * 2 * kv * d * 1


def test_mimo_v2_is_weighed_in_full_as_vllm_builds_it() -> None:
    """MiMo-V2-Flash (vLLM 0.33 mimo_v2.py): 9 full-attention layers (64 heads, 4 KV heads) and 39 sliding-window
    ones (64 heads, 8 KV heads, a sink logit per head) by hybrid_layer_pattern, QK heads of 192 and V heads of 128,
    an fp32 router (moe_router_dtype's default) with its fp32 correction bias, one dense layer; KV per token on the
    full layers, a 128-token window on the sliding ones; its MTP layers are said not to be counted."""
    desc = resolve_model("tests/fixtures/models/XiaomiMiMo--MiMo-V2-Flash")
    fp = desc.footprint
    assert fp is not None and "mimo_v2.py" in fp.source
    parts = {p.name: p for p in fp.parts}
    h = 4096
    assert set(parts["attention"].linear) == {
        (9, 64 * 192, h),
        (9, 4 * 192, h),
        (9, 4 * 128, h),
        (9, h, 64 * 128),
        (39, 64 * 192, h),
        (39, 8 * 192, h),
        (39, 8 * 128, h),
        (39, h, 64 * 128),
    }
    assert parts["attention"].raw_bytes == 39 * 64 * 2  # the sliding layers' sink logits
    assert parts["router"].linear == () and parts["router"].raw_bytes == 47 * 256 * (4 * h + 4)
    assert parts["dense MLP layers"].linear == ((2, 16384, h), (1, h, 16384))
    assert fp.kv_bytes_per_token == 9 * 4 * (192 + 128) * 2
    assert fp.kv_bytes_fixed == 39 * 128 * 8 * (192 + 128) * 2
    assert any("MTP layers" in n and "not counted" in n for n in fp.notes)


def test_nemotron_h_is_weighed_in_full_as_vllm_builds_it() -> None:
    """Nemotron-3-Nano (vLLM 0.33 nemotron_h.py, mamba_mixer2.py): one block per layer by hybrid_override_pattern
    (6 attention, 23 Mamba-2, 23 MoE), one norm each; the Mamba-2 in_proj/out_proj, conv1d with bias, A (fp32),
    D, dt_bias and the gated norm; squared-ReLU shared experts (up and down only); KV on the 6 attention layers and
    each Mamba layer's conv and fp32 SSM state. 31.6B parameters: 63.2 GB in bf16."""
    desc = resolve_model("tests/fixtures/models/nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    fp = desc.footprint
    assert fp is not None and "nemotron_h.py" in fp.source
    parts = {p.name: p for p in fp.parts}
    h, inner, gn, heads = 2688, 64 * 64, 8 * 128, 64
    assert parts["attention"].linear == ((6, 32 * 128, h), (6, 2 * 128, h), (6, 2 * 128, h), (6, h, 32 * 128))
    assert parts["linear attention"].linear == ((23, 2 * inner + 2 * gn + heads, h), (23, h, inner))
    conv = inner + 2 * gn
    assert parts["linear attention"].raw_bytes == 23 * (2 * conv * 4 + 2 * conv + 4 * heads + 4 * heads + 2 * inner)
    assert parts["norms"].raw_bytes == 2 * h * (52 + 1)
    assert parts["shared experts"].linear == ((23, 3712, h), (0, 3712, h), (23, h, 3712))
    assert "dense MLP layers" not in parts
    assert fp.kv_bytes_per_token == 6 * 2 * 2 * 128 * 2
    assert fp.kv_bytes_fixed == 23 * (2 * conv * 3 + 4 * heads * 64 * 128)
    total = sum(p.bytes for p in fp.parts) + sum(
        len(g.layers) * g.num_experts * g.expert_weight_bytes() for g in desc.layer_groups
    )
    assert 63.0e9 < total < 63.4e9


def test_gemma4_is_weighed_in_full_as_vllm_builds_it() -> None:
    """Gemma-4 26B-A4B (vLLM 0.33 gemma4.py; per-layer shapes from transformers configuration_gemma4.py): 25
    sliding layers (8 KV heads of 256) and 5 global ones (global_head_dim 512, num_global_key_value_heads 2, V held
    though k_eq_v), q/k norms, a dense MLP beside the experts in every layer, the router's input and per-expert
    scales, 7 norms per layer, tied embeddings; the vision tower is said not to be counted."""
    desc = resolve_model("tests/fixtures/models/google--gemma-4-26B-A4B")
    fp = desc.footprint
    assert fp is not None and "gemma4.py" in fp.source
    parts = {p.name: p for p in fp.parts}
    h, nh = 2816, 16
    assert set(parts["attention"].linear) == {
        (5, nh * 512, h),
        (5, 2 * 512, h),
        (5, h, nh * 512),
        (25, nh * 256, h),
        (25, 8 * 256, h),
        (25, h, nh * 256),
    }
    assert parts["attention"].raw_bytes == 5 * 4 * 512 + 25 * 4 * 256
    assert parts["dense MLP beside the experts"].linear == ((60, 2112, h), (30, h, 2112))
    assert parts["router"].raw_bytes == 0 and parts["router scales"].raw_bytes == 30 * 2 * (h + 128)
    assert parts["norms"].raw_bytes == 2 * h * (7 * 30 + 1)
    assert "LM head" not in parts
    assert fp.kv_bytes_per_token == 5 * 2 * 2 * 512 * 2
    assert fp.kv_bytes_fixed == 25 * 1024 * 2 * 8 * 256 * 2
    assert any("vision tower" in n and "not counted" in n for n in fp.notes)
