"""Where the engine releases' source lines the gates cite can be read: each file at the release tag.

A citation is ``f"{SGLANG_SRC}/srt/<path>#L<a>-L<b>"`` (the wheel's ``sglang/srt/<path>`` is the tag's
``python/sglang/srt/<path>``) or ``f"{VLLM_SRC}/<path>#L<a>-L<b>"`` (the wheel's ``vllm/<path>``), so an operator
opens the same lines the release wheel ships; ``tests/test_provenance.py`` checks every cited file and line range
against the wheels.
"""

from __future__ import annotations

#: SGLang 0.5.23's package directory at its release tag (``.../python/sglang``).
SGLANG_SRC = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang"
#: vLLM 0.33.0's package directory at its release tag (``.../vllm``).
VLLM_SRC = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm"
