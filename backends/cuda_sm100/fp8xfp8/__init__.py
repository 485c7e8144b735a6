"""``deep_gemm_mega_moe:sm100_fp8xfp8``."""
