"""SM90 non-fused FP8 MoE: DeepGEMM grouped GEMMs behind the runtime interface (``nonfused:deepgemm_fp8_*``)."""
