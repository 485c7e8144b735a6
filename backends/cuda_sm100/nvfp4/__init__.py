"""``deep_gemm_mega_moe:sm100_nvfp4``."""
