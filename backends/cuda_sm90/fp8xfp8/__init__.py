"""``deep_gemm_mega_moe:sm90_fp8xfp8``: FP8 block-128 experts, FP8 per-128 activations."""
