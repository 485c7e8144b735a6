"""GPU kernels of moe-oracle's own (Triton: runs on CUDA and ROCm). Imported only on the data path."""
