#!/bin/bash -eu
# Builds bpfconv's fuzz targets (fuzz/fuzz_targets/*.rs) for ClusterFuzzLite /
# OSS-Fuzz, and packs each target's committed seeds (fuzz/seeds/<target>/)
# as <target>_seed_corpus.zip beside it.
#
# Also runs on a developer machine, without Docker: every variable the
# service sets has a default.
#   SRC          checkout parent (default: the directory above this repo)
#   OUT          where fuzzers go (default: <repo>/fuzz/out)
#   SANITIZER    address (default) | memory | undefined | coverage
#   CARGO_TARGET_DIR  honoured; default <repo>/fuzz/target (cargo-fuzz's own)
#
#   bash .clusterfuzzlite/build.sh && ls fuzz/out

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${SRC:-}" ] && [ -d "$SRC/bpfconv/fuzz" ]; then
    REPO="$SRC/bpfconv"
fi
OUT="${OUT:-$REPO/fuzz/out}"
SANITIZER="${SANITIZER:-address}"
mkdir -p "$OUT"
cd "$REPO"

# The repository pins stable in rust-toolchain.toml; libFuzzer builds need nightly.
CARGO="cargo +nightly"
if ! $CARGO --version >/dev/null 2>&1; then
    CARGO="cargo"   # images whose only toolchain is a nightly without rustup
fi
if ! $CARGO fuzz --version >/dev/null 2>&1; then
    $CARGO install cargo-fuzz --locked
fi

case "$SANITIZER" in
    address|coverage|introspector) SANITIZER_ARGS=() ;;  # coverage: the image's cargo wrapper adds its flags
    memory) SANITIZER_ARGS=(--sanitizer memory) ;;
    undefined|none) SANITIZER_ARGS=(--sanitizer none) ;;
    *) echo "build.sh: unsupported SANITIZER=$SANITIZER" >&2; exit 1 ;;
esac

$CARGO fuzz build -O --debug-assertions --fuzz-dir fuzz ${SANITIZER_ARGS[@]+"${SANITIZER_ARGS[@]}"}

BUILT="${CARGO_TARGET_DIR:-$REPO/fuzz/target}/x86_64-unknown-linux-gnu/release"
count=0
for src in fuzz/fuzz_targets/*.rs; do
    target="$(basename "$src" .rs)"
    cp "$BUILT/$target" "$OUT/$target"
    if [ -d "fuzz/seeds/$target" ]; then
        rm -f "$OUT/${target}_seed_corpus.zip"
        (cd "fuzz/seeds/$target" && zip -q -r "$OUT/${target}_seed_corpus.zip" .)
    fi
    printf '[libfuzzer]\nmax_len = 4096\ntimeout = 10\n' > "$OUT/$target.options"
    count=$((count + 1))
done
echo "build.sh: $count fuzz targets in $OUT"
