"""SGLang 0.5.23: the version, and where its source lines can be read (each file at the release tag).

A citation is ``f"{SOURCE}/srt/<path>#L<a>-L<b>"`` (the wheel's ``sglang/srt/<path>`` is the tag's
``python/sglang/srt/<path>``), so an operator opens the same lines the release wheel ships;
``tests/test_provenance.py`` checks every cited file and line range against the wheel.
"""

from __future__ import annotations

#: The release moe-oracle's SGLang gates, model-class table, flag vocabulary and plans were read from.
VERSION = "0.5.23"
#: SGLang 0.5.23's package directory at its release tag (``.../python/sglang``).
SOURCE = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang"
#: The same directory as a tree (a folder, not a file).
SOURCE_TREE = SOURCE.replace("/blob/", "/tree/")
