"""vLLM 0.33.0: the version, and where its source lines can be read (each file at the release tag).

A citation is ``f"{SOURCE}/<path>#L<a>-L<b>"`` (the wheel's ``vllm/<path>``), so an operator opens the same lines
the release wheel ships; ``tests/test_provenance.py`` checks every cited file and line range against the wheel.
"""

from __future__ import annotations

#: The release moe-oracle's vLLM gates, model-class table, flag vocabulary and plans were read from.
VERSION = "0.33.0"
#: Its minor series, as messages name it ("vLLM 0.33 builds ...").
SERIES = "0.33"
#: vLLM 0.33.0's package directory at its release tag (``.../vllm``).
SOURCE = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm"
#: The same directory as a tree (a folder, not a file).
SOURCE_TREE = SOURCE.replace("/blob/", "/tree/")
