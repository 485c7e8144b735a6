#!/usr/bin/env bash
# Run the tests that need the real SGLang 0.5.23 (tests/engines/test_real_sglang.py) and the static
# wheel checks (tests/engines/test_engine_vocabulary.py) in a separate virtual environment.
#
#   tests/engines/run_real_sglang.sh            # venv at ${SGLANG_VENV:-/tmp/sglang-venv}
#
# The venv gets sglang==0.5.23 (about 11 GB: torch 2.14.1 and its CUDA libraries, sgl-deep-gemm
# 0.2.3.post2 as SGLang pins it) and moe-oracle (editable, no dependencies beyond what SGLang
# brings). No GPU is needed: the target GPU is set through SGLang's own platform override, and the
# counts are written to ${MOE_ORACLE_SGLANG_COUNTS:-/tmp/moe-oracle-sglang-counts.txt}.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${SGLANG_VENV:-/tmp/sglang-venv}"
wheels="${MOE_ORACLE_WHEELS:-$HOME/.cache/moe-oracle/wheels}"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
fi
"$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("sglang") != "0.5.23")' 2>/dev/null \
    || "$venv/bin/pip" install "sglang==0.5.23"
"$venv/bin/pip" install -q -e "$here" --no-deps
# google-re2: Kimi-K3's and Laguna's config loading imports re2; sglang 0.5.23's wheel metadata does not pull it in
"$venv/bin/pip" install -q "pytest>=8" "hypothesis>=6.100" "rich>=13" google-re2

mkdir -p "$wheels"
ls "$wheels"/sglang-0.5.23-*.whl >/dev/null 2>&1 || pip download -q sglang==0.5.23 --no-deps -d "$wheels" || true

cd "$here"
export MOE_ORACLE_SGLANG_COUNTS="${MOE_ORACLE_SGLANG_COUNTS:-/tmp/moe-oracle-sglang-counts.txt}"
MOE_ORACLE_WHEELS="$wheels" "$venv/bin/python" -m pytest -p no:cacheprovider -ra -q \
    tests/engines/test_real_sglang.py tests/engines/test_real_sglang_adoption.py tests/engines/test_engine_vocabulary.py "$@"
echo "counts ($MOE_ORACLE_SGLANG_COUNTS):"
cat "$MOE_ORACLE_SGLANG_COUNTS"
