"""``flashinfer_megamoe``: FlashInfer's CuTeDSL MegaMoE (``flashinfer.moe_ep``), reachable only inside SGLang."""
