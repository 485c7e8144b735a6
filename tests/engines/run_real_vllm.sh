#!/usr/bin/env bash
# Run the tests that need the real vLLM 0.33.0 (tests/engines/test_real_vllm.py: the config hook and the
# plans; tests/engines/test_real_vllm_layer.py: vLLM's real MoE blocks (GLM-5, DeepSeek-V4, Qwen3-MoE,
# MiniMax-M2) with moe-oracle's layer) and the
# static wheel checks (tests/engines/test_engine_vocabulary.py) in a separate virtual environment.
#
#   tests/engines/run_real_vllm.sh            # venv at ${VLLM_VENV:-/tmp/vllm-venv}
#
# The venv gets vllm==0.33.0 (several GB: CUDA torch) and this checkout of moe-oracle (editable, so vLLM
# loads the plug-in through its vllm.general_plugins entry point from here), with its own dependencies. Without a GPU, vLLM builds configs for
# its CPU platform (VLLM_TARGET_DEVICE=cpu) and the tests name the GPU with MOE_ORACLE_VLLM_DEVICE.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${VLLM_VENV:-/tmp/vllm-venv}"
wheels="${MOE_ORACLE_WHEELS:-$HOME/.cache/moe-oracle/wheels}"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
fi
"$venv/bin/python" -c 'import vllm, sys; sys.exit(vllm.__version__ != "0.33.0")' 2>/dev/null \
    || "$venv/bin/pip" install "vllm==0.33.0"
"$venv/bin/pip" install -q -e "$here" --no-deps
# google-re2: the harness venv lacked it (issue 21); vllm 0.33.0's wheel metadata does not pull it in
"$venv/bin/pip" install -q "pytest>=8" "hypothesis>=6.100" pydantic click rich packaging google-re2
"$venv/bin/python" -c 'import moe_oracle, sys; sys.exit(not moe_oracle.__file__.startswith(sys.argv[1]))' "$here" \
    || { echo "moe_oracle in $venv does not resolve to $here" >&2; exit 1; }

mkdir -p "$wheels"
ls "$wheels"/vllm-0.33.0-*.whl >/dev/null 2>&1 || pip download -q vllm==0.33.0 --no-deps -d "$wheels" || true
ls "$wheels"/sglang-0.5.23-*.whl >/dev/null 2>&1 || pip download -q sglang==0.5.23 --no-deps -d "$wheels" || true

cd "$here"
if ! "$venv/bin/python" -c 'import torch; import sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    export VLLM_TARGET_DEVICE=cpu
fi
MOE_ORACLE_WHEELS="$wheels" "$venv/bin/python" -m pytest -p no:cacheprovider -ra \
    tests/engines/test_real_vllm.py tests/engines/test_real_vllm_layer.py tests/engines/test_real_vllm_loop.py \
    tests/engines/test_real_vllm_adoption.py \
    tests/engines/test_engine_vocabulary.py "$@"
