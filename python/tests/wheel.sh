#!/usr/bin/env bash
# The wheel as users get it, built and used without Docker (run-tests.sh
# runs both steps; `python/tests/wheel.sh build test` by hand).
#
#   build: one abi3 manylinux2014 wheel with maturin and zig (the `ziglang`
#          package in the test venv) from the root pyproject.toml (whose
#          manifest-path is python/Cargo.toml), as the release workflow
#          builds it, into target/wheel/dist; `auditwheel show` must find it
#          manylinux2014 (glibc 2.17) or older, and abi3.
#   test:  the wheel installed with pip into a fresh venv with no Rust
#          toolchain on PATH; there `preflight` (the console script) and
#          `python -m preflight` must print exactly what the cargo-built
#          binary prints, with its exit status, and `import preflight` works.
#
# The build is a smoke build, not a release: opt-level 1, no LTO, more
# codegen units and no debug info (through the environment, so Cargo.toml's
# release profile stays what a release uses; opt-level 1 builds a clean
# clone's wheel in 435 s instead of 510 s), in a target dir of its own so it
# never waits on, or blocks, the debug builds of `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
py="${PREFLIGHT_TEST_PYTHON:-$root/target/test-venv/bin/python}"
tools="$(dirname "$py")"
dist=target/wheel/dist
bin="${PREFLIGHT_BIN:-$root/target/debug/preflight}"

say() { echo "wheel.sh: $*" >&2; }
fail() {
    say "FAILED: $*"
    exit 1
}

build() {
    rm -rf "$dist"
    local started=$SECONDS
    # maturin finds zig as `python3 -m ziglang` of the venv.
    PATH="$tools:$PATH" \
        CARGO_TARGET_DIR="$root/target/wheel" \
        CARGO_PROFILE_RELEASE_LTO=false \
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        CARGO_PROFILE_RELEASE_DEBUG=false \
        CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
        "$tools/maturin" build --quiet --release --zig --compatibility manylinux2014 --out "$dist"
    local whl
    whl=$(wheel)
    say "built $(basename "$whl") in $((SECONDS - started)) s"
    case "$(basename "$whl")" in
    *-cp39-abi3-*) ;;
    *) fail "$whl is not an abi3 (cp39-abi3) wheel" ;;
    esac
    local shown
    shown=$("$tools/auditwheel" show "$whl") || fail "auditwheel show: $shown"
    # "... is consistent with the following platform tag:
    # "manylinux_2_17_x86_64"." (wrapped anywhere)
    local glibc
    glibc=$(tr -s ' \n' ' ' <<<"$shown" |
        sed -n 's/.*consistent with the following platform tag: "manylinux_2_\([0-9]*\)_[a-z0-9_]*".*/\1/p')
    [ -n "$glibc" ] && [ "$glibc" -le 17 ] || fail "auditwheel: not manylinux2014 or older:
$shown"
    # abi3: the extension is named for the stable ABI and needs no libpython.
    local listed
    listed=$("$tools/python" -m zipfile -l "$whl")
    grep -q 'preflight/_preflight\.abi3\.so' <<<"$listed" || fail "no preflight/_preflight.abi3.so in $whl"
    ! grep -q 'libpython' <<<"$shown" || fail "the extension links libpython:
$shown"
    say "auditwheel: manylinux_2_${glibc} (manylinux2014 or older), abi3"
}

wheel() {
    local found=("$dist"/data_preflight-*.whl)
    [ ${#found[@]} -eq 1 ] && [ -f "${found[0]}" ] || fail "expected one wheel in $dist (run: $0 build)"
    echo "$root/${found[0]}"
}

# Runs "$@" and prints its exit status, stdout and stderr, with the human
# report's time ("(0.01 s)") blanked: one text to compare.
outcome() {
    local out err code=0
    out=$(mktemp) err=$(mktemp)
    "$@" >"$out" 2>"$err" || code=$?
    echo "exit $code"
    sed -E 's/\([0-9.]+ s\)$/(TIME)/' "$out"
    echo "--- stderr"
    cat "$err"
    rm -f "$out" "$err"
}

test_wheel() {
    local whl venv=target/wheel/venv started=$SECONDS
    whl=$(wheel)
    [ -x "$bin" ] || fail "no cargo-built binary at $bin (cargo build first)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    # PATH without the Rust toolchain: nothing may compile.
    local path="" dir
    IFS=: read -ra dirs <<<"$PATH"
    for dir in "${dirs[@]}"; do
        [ -x "$dir/cargo" ] || [ -x "$dir/rustc" ] || path="$path${path:+:}$dir"
    done
    (
        export PATH="$root/$venv/bin:$path"
        unset VIRTUAL_ENV CARGO RUSTC RUSTUP_TOOLCHAIN
        ! command -v cargo >/dev/null && ! command -v rustc >/dev/null || fail "a Rust toolchain is still on PATH"
        python -m pip install --quiet --disable-pip-version-check "$whl"
        [ "$(command -v preflight)" = "$root/$venv/bin/preflight" ] || fail "preflight on PATH is $(command -v preflight)"
        python -c "import preflight" || fail "import preflight"
        # Published as data-preflight (`preflight` on PyPI is another
        # project); the module it installs is `preflight`.
        python -c "import importlib.metadata as m, preflight; assert m.version('data-preflight') == preflight.__version__; assert m.packages_distributions()['preflight'] == ['data-preflight']" ||
            fail "the wheel is not the distribution data-preflight of the module preflight"

        # --version: the binary's, and the package's __version__ in it.
        local version
        version=$(preflight --version) || fail "preflight --version"
        [ "$version" = "$("$bin" --version)" ] || fail "--version: '$version' vs the binary's '$("$bin" --version)'"
        python -c "import preflight, sys; v = sys.argv[1]; assert v.startswith(f'preflight {preflight.__version__} ('), (v, preflight.__version__)" "$version" ||
            fail "__version__ does not match: $version"

        # The sample data (exit 1: planted violations), a usage error and a
        # missing schema (exit 2), in every format: identical to the binary.
        local cases=(
            "check --schema sample_data/preflight.yaml"
            "check --schema sample_data/preflight.yaml --format json"
            "check --schema sample_data/preflight.yaml sample_data/clean"
            "check --schema sample_data/preflight.yaml --format junit"
            "check --schema no/such.yaml"
            "check --format yaml"
            "schema sample_data/preflight.yaml"
            "--help"
            ""
        )
        local args expected
        for args in "${cases[@]}"; do
            # shellcheck disable=SC2086
            expected=$(outcome "$bin" $args)
            # shellcheck disable=SC2086
            [ "$(outcome preflight $args)" = "$expected" ] || fail "preflight $args differs from the binary:
$(diff <(outcome preflight $args) <(echo "$expected"))"
            # shellcheck disable=SC2086
            [ "$(outcome python -m preflight $args)" = "$expected" ] || fail "python -m preflight $args differs from the binary"
        done
        grep -q '^exit 1$' <(outcome preflight check --schema sample_data/preflight.yaml) || fail "sample data: not exit 1"
        grep -q '^exit 0$' <(outcome preflight check --schema sample_data/preflight.yaml sample_data/clean) || fail "clean data: not exit 0"
        say "fresh venv without Rust: import, --version, and ${#cases[@]} command lines as \`preflight\` and \`python -m preflight\` identical to the binary ($((SECONDS - started)) s)"
    )
}

[ $# -gt 0 ] || set -- build test
for step in "$@"; do
    case "$step" in
    build) build ;;
    test) test_wheel ;;
    *) fail "unknown step $step (build, test)" ;;
    esac
done
