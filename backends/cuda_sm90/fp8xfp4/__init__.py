"""``deep_gemm_mega_moe:sm90_fp8xfp4``: MXFP4 experts, FP8 per-128 activations."""
