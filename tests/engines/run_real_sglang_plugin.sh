#!/usr/bin/env bash
# Run moe-oracle's SGLang plug-in inside the real SGLang 0.5.23 (tests/engines/test_real_sglang_plugin.py).
#
#   tests/engines/run_real_sglang_plugin.sh
#
# Reuses the SGLang venv of run_real_sglang.sh (${SGLANG_VENV:-/tmp/sglang-venv}, made by it when missing) and
# layers a small venv on top (${SGLANG_PLUGIN_VENV:-/tmp/moe-oracle-sglang-plugin-venv}: a .pth to the SGLang one)
# with this checkout installed editable, so SGLang discovers the plug-in through the entry point of this checkout
# without reinstalling moe-oracle in the shared SGLang venv. No GPU is needed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
base="${SGLANG_VENV:-/tmp/sglang-venv}"
venv="${SGLANG_PLUGIN_VENV:-/tmp/moe-oracle-sglang-plugin-venv}"
if [ ! -x "$base/bin/python" ]; then
    "$here/tests/engines/run_real_sglang.sh" --co -q >/dev/null
fi
if [ ! -x "$venv/bin/python" ]; then
    "$(readlink -f "$base/bin/python")" -m venv "$venv"
    site="$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    mine="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$site" > "$mine/zz_sglang_venv.pth"
fi
"$venv/bin/pip" install -q --no-deps -e "$here"
# the base SGLang venv has no test runner: the layer brings its own
"$venv/bin/python" -c "import pytest, hypothesis" 2>/dev/null || "$venv/bin/pip" install -q "pytest>=8" "hypothesis>=6.100"
cd "$here"
"$venv/bin/python" -m pytest -p no:cacheprovider -ra -q tests/engines/test_real_sglang_plugin.py tests/engines/test_real_sglang_layer.py "$@"
