#!/usr/bin/env bash
# Real-crate acceptance for the parking_lot compat crate.
#
# Fetches pinned releases of crates that use parking_lot (tokio, r2d2, scheduled-thread-pool
# 0.2.7 on parking_lot 0.12 and 0.2.8 on 0.13; salsa and flurry on request) from crates.io, and
# runs each one's test suite twice:
#
#   baseline  the crate as published, with the real parking_lot;
#   patched   the crate's manifest gets the patch a user would add,
#               [patch.crates-io] parking_lot = { path = "<repo>/instrumented-locks/compat/parking_lot" }
#             and, for a crate on parking_lot 0.13 (entry scheduled-thread-pool-0.13), also the
#             second line for the 0.13 compat crate,
#               parking_lot_013 = { path = "<repo>/instrumented-locks/compat/parking_lot-0.13", package = "parking_lot" }
#             and `cargo tree` must show that every parking_lot of the patched major in its
#             graph is the compat crate.
#
# Per crate it prints: compiled, tests passed/failed/ignored, build time, the test phase's
# wall time (median over --runs runs; the build is not timed in it), the patched/baseline ratio
# (the runs alternate the two modes round by round; the ratio is the median of the rounds'
# ratios), and the number of lockdep reports (lines starting `WARNING: `, the report banner,
# in the run's LOCKDEP_REPORT_FILE, which every process of the run appends to, doc tests
# included; tests also run with --nocapture). A patched run's note says how many of its
# processes validated locks (their exit lines in that file) and the most classes in one.
#
# An inverted-order probe (instrumented-locks/compat/parity/probe/) is copied into both
# scheduled-thread-pools' tests/: two mutexes taken in both orders, one after the other.
# Patched (0.12 or 0.13), a report must name the probe's file and a line of each order;
# baseline, none.
#
# Everything lives in target/real-crates/ (ignored by git): the unpacked releases (src/), one
# working copy per crate and mode with its own Cargo.lock and target dir (work/), logs (logs/),
# and results.tsv. Re-runs reuse all of it, so they work offline once everything was fetched
# (add --offline to forbid the network). The published Cargo.lock is used where the release
# ships one (tokio, salsa).
#
# Exit status: 0 everything as expected; 1 a crate failed to build, a test failed, the compat
# crate was not used, or the probe's verdict was wrong; 2 bad usage or missing prerequisites.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRATCH=$REPO/target/real-crates
COMPAT=$REPO/instrumented-locks/compat/parking_lot
COMPAT13=$REPO/instrumented-locks/compat/parking_lot-0.13
PROBE_SRC=$REPO/instrumented-locks/compat/parity/probe/lockdep_inverted_order.rs
PROBE_NAME=lockdep_inverted_order
PROBE_CRATES=(scheduled-thread-pool scheduled-thread-pool-0.13)

ALL_CRATES=(scheduled-thread-pool scheduled-thread-pool-0.13 r2d2 r2d2-0.13 tokio salsa flurry)
DEFAULT_CRATES=(scheduled-thread-pool scheduled-thread-pool-0.13 r2d2 r2d2-0.13 tokio)
QUICK_CRATES=(scheduled-thread-pool scheduled-thread-pool-0.13 r2d2 r2d2-0.13)

# Entries are crate names, or NAME-0.13 for a crate whose graph has parking_lot 0.13 (PACKAGE
# gives the crate's name; MAJOR=0.13 adds the 0.13 compat crate's patch line and checks it is
# used, next to the 0.12 one). r2d2-0.13 is r2d2 as a user resolves it today: its own
# parking_lot 0.12 and scheduled-thread-pool 0.2.8 on parking_lot 0.13, both patched.
declare -A VERSION=(
    [tokio]=1.54.1 [r2d2]=0.8.10 [scheduled-thread-pool]=0.2.7 [salsa]=0.28.5 [flurry]=0.5.2
    [scheduled-thread-pool-0.13]=0.2.8 [r2d2-0.13]=0.8.10
)
declare -A PACKAGE=([scheduled-thread-pool-0.13]=scheduled-thread-pool [r2d2-0.13]=r2d2)
declare -A MAJOR=([scheduled-thread-pool-0.13]=0.13 [r2d2-0.13]=0.13)
pkg_of() { echo "${PACKAGE[$1]:-$1}"; }
major_of() { echo "${MAJOR[$1]:-0.12}"; }
major_re() { # ENTRY -> an extended regex for `parking_lot v<major>.` in cargo tree's output
    echo "^parking_lot v$(major_of "$1" | sed 's/\./\\./g')\\."
}
compat_of() { # ENTRY -> the compat crate its patched mode must show
    if [[ $(major_of "$1") == 0.13 ]]; then echo "$COMPAT13"; else echo "$COMPAT"; fi
}
is_probe_crate() { [[ " ${PROBE_CRATES[*]} " == *" $1 "* ]]; }
# Dependencies pinned inside a crate's graph (NAME@VERSION ...). r2d2 asks for
# scheduled-thread-pool ^0.2, and 0.2.8 moved to parking_lot 0.13, which a 0.12 patch does not
# reach: pin the 0.2.7 that is tested on its own here.
declare -A PINS=([r2d2]="scheduled-thread-pool@0.2.7" [r2d2-0.13]="scheduled-thread-pool@0.2.8")
# Tests that fail now and then at baseline, with the real parking_lot: their failures are
# listed but do not fail the run. r2d2's `test::events` asserts the order of events that the
# pool's worker threads record concurrently (release of the broken connection vs. acquisition
# of its replacement). `test::test_max_lifetime` sleeps 2 s and asserts that the pool's
# reaper (run every 1 s by a scheduled-thread-pool worker) dropped the expired connections by
# then: on a loaded machine the worker runs late (seen at baseline, with the real parking_lot
# 0.13, in CI). `test::test_idle_timeout` is the same sleep against the same reaper, for idle
# connections (failed patched in CI while other builds shared the machine; at baseline, with
# three busy loops on 2 cores, it failed 1 run in 4).
declare -A FLAKY=(
    [r2d2]="test::events test::test_max_lifetime test::test_idle_timeout"
    [r2d2-0.13]="test::events test::test_max_lifetime test::test_idle_timeout"
)

usage() {
    cat <<'EOF'
usage: scripts/real-crates.sh [options]

  --only NAMES      comma-separated crates: tokio, r2d2, scheduled-thread-pool, salsa, flurry,
                    and the parking_lot 0.13 entries scheduled-thread-pool-0.13 (0.2.8) and
                    r2d2-0.13 (with scheduled-thread-pool 0.2.8)
                    (default: scheduled-thread-pool{,-0.13},r2d2{,-0.13},tokio)
  --all             all seven entries
  --quick           the fast ones only (scheduled-thread-pool{,-0.13}, r2d2{,-0.13}), for CI
  --baseline-only   only the unmodified crates (works without the compat crate)
  --patched-only    only the patched crates (reuses an earlier baseline's results for ratios)
  --runs N          time the test phase N times and report the median (default 1)
  --jobs N          parallel build jobs for cargo (default: cargo's own)
  --compat DIR      the compat crate to patch in (default instrumented-locks/compat/parking_lot)
  --compat-013 DIR  the 0.13 compat crate (default instrumented-locks/compat/parking_lot-0.13)
  --tables          patched builds get the README's [profile.dev.package.*] tables (opt-level
                    3 for lockdep, hazptr, instrumented-locks and the compat crates), as a user
                    following the README has; the baseline stays as published. Without it,
                    patched builds run the validator unoptimized (the dev profile)
  --clean           remove the crates' target dirs first, so build times are from scratch
  --offline         pass --offline to cargo (everything must have been fetched before)
  -h, --help        this text
EOF
}

die() {
    echo "real-crates: error: $*" >&2
    exit 2
}
note() { echo "real-crates: $*" >&2; }

# ------------------------------------------------------------------------------------------
# Options.

CRATES=("${DEFAULT_CRATES[@]}")
MODES=(baseline patched)
RUNS=1
JOBS=()
OFFLINE=()
CLEAN=0
TABLES=0
while [[ $# -gt 0 ]]; do
    case $1 in
    --only)
        [[ $# -ge 2 ]] || die "--only needs a list of crates"
        IFS=, read -r -a CRATES <<<"$2"
        shift 2
        ;;
    --all) CRATES=("${ALL_CRATES[@]}"); shift ;;
    --quick) CRATES=("${QUICK_CRATES[@]}"); shift ;;
    --baseline-only) MODES=(baseline); shift ;;
    --patched-only) MODES=(patched); shift ;;
    --runs)
        [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--runs needs a positive number"
        RUNS=$2
        shift 2
        ;;
    --jobs)
        [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a positive number"
        JOBS=(-j "$2")
        shift 2
        ;;
    --compat)
        [[ $# -ge 2 ]] || die "--compat needs a directory"
        COMPAT=$(cd "$2" 2>/dev/null && pwd) || die "--compat: no directory $2"
        shift 2
        ;;
    --compat-013)
        [[ $# -ge 2 ]] || die "--compat-013 needs a directory"
        COMPAT13=$(cd "$2" 2>/dev/null && pwd) || die "--compat-013: no directory $2"
        shift 2
        ;;
    --clean) CLEAN=1; shift ;;
    --tables) TABLES=1; shift ;;
    --offline) OFFLINE=(--offline); shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
    esac
done
for c in "${CRATES[@]}"; do
    [[ -n ${VERSION[$c]:-} ]] || die "unknown crate '$c' (known: ${ALL_CRATES[*]})"
done
command -v cargo >/dev/null || die "cargo not found"
[[ $TABLES == 1 ]] && note "patched builds get the README's profile tables (--tables)"
command -v tar >/dev/null || die "tar not found"
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}

check_compat_manifest() { # DIR MAJOR
    local manifest=$1/Cargo.toml
    [[ -f $manifest ]] || die "compat crate not found: $manifest does not exist.
  The patched runs need it; until it exists, run with --baseline-only (or point --compat at one)."
    grep -Eq '^name *= *"parking_lot"' "$manifest" ||
        die "$manifest is not a package named parking_lot: the patch would not apply"
    grep -Eq "^version *= *\"${2//./\\.}\\." "$manifest" ||
        die "$manifest: version is not $2.x, so it cannot satisfy the crates' parking_lot ^$2"
}
if [[ " ${MODES[*]} " == *" patched "* ]]; then
    check_compat_manifest "$COMPAT" 0.12
    for c in "${CRATES[@]}"; do
        if [[ $(major_of "$c") == 0.13 ]]; then
            check_compat_manifest "$COMPAT13" 0.13
            break
        fi
    done
fi

mkdir -p "$SCRATCH"/{src,work,logs}

# ------------------------------------------------------------------------------------------
# Fetch and unpack the pinned releases.

crate_file() { # NAME VERSION -> path of the cached .crate, or nothing
    local f
    for f in "$CARGO_HOME"/registry/cache/*/"$1-$2.crate"; do
        [[ -f $f ]] && { echo "$f"; return; }
    done
}

fetch_all() {
    local missing=() c p
    for c in "${CRATES[@]}"; do
        p=$(pkg_of "$c")
        [[ -d $SCRATCH/src/$p-${VERSION[$c]} ]] && continue
        [[ -n $(crate_file "$p" "${VERSION[$c]}") ]] || missing+=("$c")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        # A scratch package per release: `cargo fetch` downloads it into cargo's own cache,
        # through cargo's ordinary registry client. One package each, because one resolve
        # cannot hold two semver-compatible releases of a crate (0.2.7 and 0.2.8), even
        # renamed.
        note "fetching ${missing[*]} from crates.io"
        : >"$SCRATCH/logs/fetch.log"
        for c in "${missing[@]}"; do
            local dir=$SCRATCH/_fetch/${c//./_}
            mkdir -p "$dir/src"
            : >"$dir/src/lib.rs"
            {
                printf '[package]\nname = "real-crates-fetch"\nversion = "0.0.0"\nedition = "2021"\n'
                printf 'publish = false\n\n[workspace]\n\n[dependencies]\n'
                printf '%s = { package = "%s", version = "=%s" }\n' "${c//./_}" "$(pkg_of "$c")" "${VERSION[$c]}"
            } >"$dir/Cargo.toml"
            cargo fetch "${OFFLINE[@]}" --manifest-path "$dir/Cargo.toml" >>"$SCRATCH/logs/fetch.log" 2>&1 ||
                die "cargo fetch of $c failed (see $SCRATCH/logs/fetch.log)"
        done
    fi
    for c in "${CRATES[@]}"; do
        local p v=${VERSION[$c]} dest file
        p=$(pkg_of "$c")
        dest=$SCRATCH/src/$p-$v
        [[ -d $dest ]] && continue
        file=$(crate_file "$p" "$v")
        [[ -n $file ]] || die "$p $v is not in cargo's cache after fetching"
        # Unpack beside the destination and rename, so an interrupted run leaves no half tree.
        local tmp=$SCRATCH/src/.unpack.$$
        rm -rf "$tmp"
        mkdir -p "$tmp"
        tar -xzf "$file" -C "$tmp" || die "cannot unpack $file"
        [[ -d $tmp/$p-$v ]] || die "$file does not hold $p-$v/"
        mv "$tmp/$p-$v" "$dest"
        rmdir "$tmp"
    done
}

# ------------------------------------------------------------------------------------------
# Per-crate test suites: one line per `cargo test` invocation (its arguments), run from the
# crate's working copy. The probe is not part of any suite.

suite() { # NAME SRC_DIR
    case $1 in
    tokio)
        # The targets the issue names: every sync_* test, rt_threaded and rt_common.
        local t args="--features full,parking_lot"
        for t in "$2"/tests/sync_*.rs; do args+=" --test $(basename "$t" .rs)"; done
        echo "$args --test rt_threaded --test rt_common"
        ;;
    r2d2 | r2d2-0.13 | scheduled-thread-pool | scheduled-thread-pool-0.13)
        # No tests/ in the releases: the unit tests, and the doc tests.
        echo "--lib"
        echo "--doc"
        ;;
    salsa)
        # Default features, as published. (The trybuild compile_fail/compile_pass suites need
        # feature `persistence` and are empty without it.)
        echo "--lib --tests"
        echo "--doc"
        ;;
    flurry)
        echo "--lib --tests"
        echo "--doc"
        ;;
    esac
}

describe_suite() { # NAME
    case $1 in
    tokio) echo "tests/sync_*.rs, rt_threaded, rt_common; features full,parking_lot" ;;
    r2d2 | scheduled-thread-pool) echo "unit tests (src/), doc tests" ;;
    scheduled-thread-pool-0.13) echo "0.2.8, on parking_lot 0.13: unit tests (src/), doc tests" ;;
    r2d2-0.13) echo "with scheduled-thread-pool 0.2.8 (parking_lot 0.13): unit tests (src/), doc tests" ;;
    salsa) echo "unit + integration tests, doc tests (default features)" ;;
    flurry) echo "unit + integration tests, doc tests" ;;
    esac
}

features_of() { # NAME -> cargo feature arguments for `cargo tree`
    case $1 in tokio) echo "--features full,parking_lot" ;; esac
}

# ------------------------------------------------------------------------------------------
# Working copies.

MARK="# ---- added by scripts/real-crates.sh ----"

write_if_changed() { # FILE CONTENT: keep the mtime when nothing changes (no rebuilds)
    local tmp=$1.new.$$
    printf '%s\n' "$2" >"$tmp"
    if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}

prepare() { # NAME MODE -> prints the working copy's path
    local c=$1 mode=$2 v=${VERSION[$1]} p
    p=$(pkg_of "$c")
    local src=$SCRATCH/src/$p-$v work=$SCRATCH/work/$c-$v/$mode
    if [[ ! -d $work ]]; then
        mkdir -p "$(dirname "$work")"
        rm -rf "$work.tmp"
        cp -a "$src" "$work.tmp"
        mv "$work.tmp" "$work"
    fi
    if grep -Eq '^\[(workspace|patch\.)' "$src/Cargo.toml"; then
        die "$c $v: its manifest has its own [workspace] or [patch] table; extend prepare()"
    fi
    # A release's rust-toolchain file pins its maintainers' toolchain; use the active one.
    rm -f "$work/rust-toolchain" "$work/rust-toolchain.toml"

    local block="$MARK"$'\n'"[workspace]"$'\n'
    local patches=""
    # tokio's dev-dependencies (tokio-test, tokio-stream) depend on tokio from crates.io; the
    # tokio repository patches them onto the tokio under test, and so does this copy.
    [[ $c == tokio ]] && patches+='tokio = { path = "." }'$'\n'
    [[ $mode == patched ]] && patches+="parking_lot = { path = \"$COMPAT\" }"$'\n'
    # The second line a user adds for parking_lot 0.13: a key of its own, with `package` naming
    # the crate (one table cannot name `parking_lot` twice).
    if [[ $mode == patched && $(major_of "$c") == 0.13 ]]; then
        patches+="parking_lot_013 = { path = \"$COMPAT13\", package = \"parking_lot\" }"$'\n'
    fi
    [[ -n $patches ]] && block+=$'\n'"[patch.crates-io]"$'\n'"$patches"
    # The README's tables: the validator's crates optimized inside the crate's dev profile (a
    # `parking_lot` entry names every parking_lot in the graph, both compat crates here).
    if [[ $mode == patched && $TABLES == 1 ]]; then
        local pkg
        for pkg in lockdep hazptr instrumented-locks parking_lot; do
            block+=$'\n'"[profile.dev.package.$pkg]"$'\n'"opt-level = 3"$'\n'
        done
    fi
    if is_probe_crate "$c"; then
        mkdir -p "$work/tests"
        cmp -s "$PROBE_SRC" "$work/tests/$PROBE_NAME.rs" || cp "$PROBE_SRC" "$work/tests/$PROBE_NAME.rs"
        if grep -Eq '^autotests *= *false' "$src/Cargo.toml"; then
            block+=$'\n'"[[test]]"$'\n'"name = \"$PROBE_NAME\""$'\n'"path = \"tests/$PROBE_NAME.rs\""$'\n'
        fi
    fi
    write_if_changed "$work/Cargo.toml" "$(cat "$src/Cargo.toml")"$'\n\n'"$block"
    echo "$work"
}

# Registry versions of package NAME in a Cargo.lock (path packages have no `source`).
registry_versions() { # LOCKFILE NAME
    [[ -f $1 ]] || return 0
    awk -v want="$2" '
        /^\[\[package\]\]/ { name = ""; ver = ""; next }
        /^name = /    { gsub(/"/, "", $3); name = $3 }
        /^version = / { gsub(/"/, "", $3); ver = $3 }
        /^source = "registry/ { if (name == want) print ver }
    ' "$1" | sort -u
}

# Make the lockfile follow the [patch] entries: move every registry copy of NAME matching
# VERSION_RE onto the patch.
follow_patch() { # WORK NAME VERSION_RE LOG
    local v
    for v in $(registry_versions "$1/Cargo.lock" "$2" | grep -E "$3" || true); do
        (cd "$1" && cargo update "${OFFLINE[@]}" -p "$2@$v") >>"$4" 2>&1 ||
            { note "cargo update -p $2@$v failed in $1 (see $4)"; return 1; }
    done
}

# Apply PINS; creates the lockfile of a release that ships none (resolved once, then kept).
pin_dependencies() { # NAME WORK LOG
    local pin name ver have
    if [[ ! -f $2/Cargo.lock ]]; then
        (cd "$2" && cargo generate-lockfile "${OFFLINE[@]}") >>"$3" 2>&1 ||
            { note "$1: cargo generate-lockfile failed (see $3)"; return 1; }
    fi
    for pin in ${PINS[$1]:-}; do
        name=${pin%@*} ver=${pin#*@}
        have=$(registry_versions "$2/Cargo.lock" "$name" | tr '\n' ' ')
        [[ $have == "$ver " ]] && continue
        (cd "$2" && cargo update "${OFFLINE[@]}" -p "$name" --precise "$ver") >>"$3" 2>&1 ||
            { note "$1: cannot pin $name to $ver (see $3)"; return 1; }
    done
}

# Patched mode: every parking_lot of the entry's major in the graph must be the compat crate.
check_compat_used() { # NAME WORK LOG -> 0 when used
    local c=$1 work=$2 log=$3 feats pkgs compat major
    compat=$(compat_of "$c")
    major=$(major_re "$c")
    read -r -a feats <<<"$(features_of "$c")"
    pkgs=$(cd "$work" && cargo tree "${OFFLINE[@]}" -e normal,build,dev "${feats[@]}" --prefix none \
        --format '{p}' 2>>"$log" | grep -E '^parking_lot v' | sort -u) || {
        note "$c: cargo tree failed (see $log)"
        return 1
    }
    # Who pulls in each parking_lot (one `-i` per version: a bare name is ambiguous with two).
    local ver
    for ver in $(echo "$pkgs" | sed -n 's/^parking_lot v\([^ ]*\).*/\1/p'); do
        echo "\$ cargo tree -i parking_lot@$ver -e normal,build,dev ${feats[*]}"
        (cd "$work" && cargo tree "${OFFLINE[@]}" -i "parking_lot@$ver" -e normal,build,dev "${feats[@]}") 2>&1 || true
    done >>"$log"
    echo "$pkgs" | sed 's/^/  in graph: /' >>"$log"
    if [[ -z $pkgs ]]; then
        note "$c: no parking_lot in the dependency graph at all"
        return 1
    fi
    local bad
    # The 0.12 patch line is always there: a registry 0.12 is a miss for every entry.
    bad=$(echo "$pkgs" | grep -E '^parking_lot v0\.12\.' | grep -vF "($COMPAT)" || true)
    bad+=$(echo "$pkgs" | grep -E "$major" | grep -vF "($compat)" || true)
    if [[ -n $bad ]]; then
        note "$c: the compat crate is not used; cargo tree shows: $(echo "$bad" | tr '\n' ' ')"
        return 1
    fi
    if ! echo "$pkgs" | grep -qF "($compat)"; then
        note "$c: the compat crate at $compat is not in the dependency graph"
        return 1
    fi
    local other
    other=$(echo "$pkgs" | grep -vE "$major" | grep -vF "($COMPAT)" || true)
    [[ -z $other ]] || note "$c: also depends on $(echo "$other" | tr '\n' ' ')(not patched)"
    return 0
}

# ------------------------------------------------------------------------------------------
# Timing and counting.

now() { echo "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "-"; exit }
    if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
sum_results() { # LOG -> "passed failed ignored"
    awk '/^test result: / { p += $4; f += $6; i += $8 } END { printf "%d %d %d\n", p, f, i }' "$1"
}
# count_reports LOG -> the reports of a run: those in its report file (LOG.reports, which
# LOCKDEP_REPORT_FILE fills from every process of the run, doc tests included), else those in
# the log (a run that made no report file: unpatched, or nothing reported).
count_reports() {
    if [[ -f $1.reports ]]; then grep -c '^WARNING: ' "$1.reports" || true; else grep -c '^WARNING: ' "$1" || true; fi
}
# validated LOG -> "N M": processes of the run that validated a lock (their exit lines in the
# report file) and the most lock classes one of them made.
validated() {
    [[ -f $1.reports ]] || { echo "0 0"; return; }
    awk '/^lockdep: exit of pid / { n++; for (i = 1; i <= NF; i++) if ($(i + 1) == "lock" && $i + 0 > m) m = $i + 0 }
         END { printf "%d %d\n", n, m }' "$1.reports"
}
failed_tests() { # LOG -> names of failed tests, one per line
    sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$1" | sort -u
}

suite_lines() { # NAME -> fills the array SUITE with the suite's cargo test argument lines
    mapfile -t SUITE < <(suite "$1" "$SCRATCH/src/$(pkg_of "$1")-${VERSION[$1]}")
}

# build_suite NAME WORK MODE -> sets B_COMPILED (yes/no) and B_BUILD (seconds)
build_suite() {
    local c=$1 work=$2 mode=$3 blog=$SCRATCH/logs/$1-$3-build.log line args t0 t1 a
    suite_lines "$c"
    B_COMPILED=yes
    : >"$blog"
    t0=$(now)
    for line in "${SUITE[@]}"; do
        read -r -a args <<<"$line"
        # Doc tests cannot be built ahead (rustdoc compiles them when they run, which is then
        # part of the test phase); build the library they link instead.
        local build=(test "${args[@]}" --no-run)
        if [[ " ${args[*]} " == *" --doc "* ]]; then
            build=(build)
            for a in "${args[@]}"; do [[ $a == --doc ]] || build+=("$a"); done
        fi
        echo "\$ cargo ${build[*]}" >>"$blog"
        if ! (cd "$work" && cargo "${build[0]}" "${OFFLINE[@]}" "${JOBS[@]}" "${build[@]:1}") >>"$blog" 2>&1; then
            B_COMPILED=no
        fi
    done
    t1=$(now)
    B_BUILD=$(elapsed "$t0" "$t1")
}

# test_once NAME WORK MODE RUN -> sets T_SECONDS; the output goes to the run's log. A file
# `<log>.cargo-failed` records that some `cargo test` exited non-zero.
test_once() {
    local c=$1 work=$2 mode=$3 tlog=$SCRATCH/logs/$1-$3-test-$4.log line args t0 t1
    suite_lines "$c"
    : >"$tlog"
    rm -f "$tlog.cargo-failed" "$tlog.reports"
    t0=$(now)
    for line in "${SUITE[@]}"; do
        read -r -a args <<<"$line"
        echo "\$ cargo test ${args[*]} --no-fail-fast -- --nocapture" >>"$tlog"
        if ! (cd "$work" && LOCKDEP_REPORT_FILE=$tlog.reports cargo test "${OFFLINE[@]}" "${args[@]}" --no-fail-fast -- --nocapture) \
            >>"$tlog" 2>&1; then
            : >"$tlog.cargo-failed"
        fi
    done
    t1=$(now)
    T_SECONDS=$(elapsed "$t0" "$t1")
}

# summarize NAME MODE -> from the runs' logs: R_PASSED R_FAILED R_IGNORED R_REPORTS (run 1's),
# R_NOTE, and R_VERDICT: ok when tests ran and every failure, in any run, is a known flaky test.
summarize() {
    local c=$1 mode=$2 run tlog counts names first="" differs=0 failed_names="" failing_runs=0
    local cargo_failed=0
    for ((run = 1; run <= RUNS; run++)); do
        tlog=$SCRATCH/logs/$c-$mode-test-$run.log
        [[ ! -f $tlog.cargo-failed ]] || cargo_failed=1
        counts="$(sum_results "$tlog") $(count_reports "$tlog")"
        names=$(failed_tests "$tlog")
        if [[ -n $names ]]; then
            failing_runs=$((failing_runs + 1))
            failed_names=$(printf '%s\n%s\n' "$failed_names" "$names" | grep -v '^$' | sort -u)
        fi
        if [[ -z $first ]]; then
            first=$counts
        elif [[ $counts != "$first" ]]; then
            differs=1
        fi
    done
    read -r R_PASSED R_FAILED R_IGNORED R_REPORTS <<<"$first"
    R_NOTE="" R_VERDICT=FAIL
    [[ $differs == 0 ]] || R_NOTE="counts differ between runs (passed/failed/ignored/reports are run 1's)"
    if [[ $R_PASSED == 0 && $R_FAILED == 0 ]]; then
        R_NOTE="no test ran: see $SCRATCH/logs/$c-$mode-test-1.log"
        return
    fi
    local unexpected="" name
    for name in $failed_names; do
        [[ " ${FLAKY[$c]:-} " == *" $name "* ]] || unexpected+="$name "
    done
    if [[ -n $failed_names ]]; then
        R_NOTE+="${R_NOTE:+; }failed in $failing_runs of $RUNS run(s): $(echo $failed_names)"
        [[ -n $unexpected ]] || R_NOTE+=" (known flaky at baseline)"
    fi
    # cargo failing with no failed test named (a crashed or aborted test binary) is a failure.
    if [[ $cargo_failed == 1 && -z $failed_names ]]; then
        R_NOTE+="${R_NOTE:+; }cargo test failed but named no failed test (a test binary crashed?)"
    elif [[ -z $unexpected ]]; then
        R_VERDICT=ok
    fi
    if [[ $mode != baseline ]]; then
        local procs classes
        read -r procs classes <<<"$(validated "$SCRATCH/logs/$c-$mode-test-1.log")"
        if [[ $procs == 0 ]]; then
            R_NOTE+="${R_NOTE:+; }no process of the suite validated a lock (no exit line in the report file)"
        else
            R_NOTE+="${R_NOTE:+; }$procs process(es) validated locks, up to $classes lock class(es) in one"
        fi
    fi
    R_NOTE+="${R_NOTE:+; }logs: $SCRATCH/logs/$c-$mode-test-*.log"
}

# The inverted-order probe. Sets P_VERDICT (ok/FAIL) and P_DETAIL.
run_probe() { # NAME WORK MODE
    local work=$2 mode=$3 log=$SCRATCH/logs/probe-$1-$3.log
    local file=tests/$PROBE_NAME.rs order1 order2 reports
    order1=$(grep -n '// PROBE-ORDER-1 ' "$PROBE_SRC" | cut -d: -f1 | tr '\n' ' ')
    order2=$(grep -n '// PROBE-ORDER-2 ' "$PROBE_SRC" | cut -d: -f1 | tr '\n' ' ')
    if ! (cd "$work" && cargo test "${OFFLINE[@]}" "${JOBS[@]}" --test "$PROBE_NAME" -- --nocapture) >"$log" 2>&1; then
        P_VERDICT=FAIL P_DETAIL="the probe did not build or its test failed: $log"
        return
    fi
    reports=$(count_reports "$log")
    if [[ $mode == baseline ]]; then
        if [[ $reports == 0 ]]; then
            P_VERDICT=ok P_DETAIL="no report (as expected without lockdep)"
        else
            P_VERDICT=FAIL P_DETAIL="$reports report(s) without lockdep?: $log"
        fi
        return
    fi
    if [[ $reports == 0 ]]; then
        P_VERDICT=FAIL P_DETAIL="no lockdep report for the inverted order: $log"
        return
    fi
    # The report text: from the first banner on.
    local text found1="" found2="" l
    text=$(sed -n '/^WARNING: /,$p' "$log")
    for l in $order1; do grep -q "$PROBE_NAME.rs:$l:" <<<"$text" && found1+="$l "; done
    for l in $order2; do grep -q "$PROBE_NAME.rs:$l:" <<<"$text" && found2+="$l "; done
    if [[ -n $found1 && -n $found2 ]]; then
        P_VERDICT=ok P_DETAIL="$reports report(s); names $file lines ${found1}(order 1) and ${found2}(order 2)"
    else
        P_VERDICT=FAIL
        P_DETAIL="$reports report(s), but they do not name $file at a line of each order"
        P_DETAIL+=" (order 1: lines $order1-> found ${found1:-none}; order 2: lines $order2-> found ${found2:-none}): $log"
    fi
}

# ------------------------------------------------------------------------------------------
# Main.

fetch_all
RESULTS=$SCRATCH/results.tsv
[[ -f $RESULTS ]] || printf 'crate\tversion\tmode\tcompiled\tbuild_s\tpassed\tfailed\tignored\ttest_s_median\ttest_s_each\tratio\treports\tcompat_used\tnote\n' >"$RESULTS"

STATUS=0
for c in "${CRATES[@]}"; do
    v=${VERSION[$c]}
    echo
    echo "== $c $v: $(describe_suite "$c")"
    declare -A WORK=() READY=() USED=() BUILD=() COMPILED=() TIMES=() SETUP_NOTE=() PROBE=()

    # Set up and build each mode.
    for mode in "${MODES[@]}"; do
        work=$(prepare "$c" "$mode")
        WORK[$mode]=$work
        log=$SCRATCH/logs/$c-$mode-setup.log
        : >"$log"
        [[ $CLEAN == 0 ]] || rm -rf "$work/target"
        USED[$mode]=- READY[$mode]=1 BUILD[$mode]=- COMPILED[$mode]=no TIMES[$mode]=""
        pin_dependencies "$c" "$work" "$log" || READY[$mode]=0
        if [[ $c == tokio && ${READY[$mode]} == 1 ]]; then
            follow_patch "$work" tokio '.' "$log" || READY[$mode]=0
        fi
        if [[ $mode == patched && ${READY[$mode]} == 1 ]]; then
            USED[$mode]=no
            # follow_patch matches bare versions (0.13.0), not cargo tree's `parking_lot v..`.
            if follow_patch "$work" parking_lot '^0\.12\.' "$log" &&
                follow_patch "$work" parking_lot "^$(major_of "$c" | sed 's/\./\\./g')\\." "$log" &&
                check_compat_used "$c" "$work" "$log"; then
                USED[$mode]=yes
            else
                READY[$mode]=0
            fi
        fi
        if [[ ${READY[$mode]} == 0 ]]; then
            SETUP_NOTE[$mode]="not run: setup failed or compat crate not used ($log)"
            STATUS=1
            continue
        fi
        build_suite "$c" "$work" "$mode"
        COMPILED[$mode]=$B_COMPILED BUILD[$mode]=$B_BUILD
        if [[ $B_COMPILED == no ]]; then
            SETUP_NOTE[$mode]="build failed: $SCRATCH/logs/$c-$mode-build.log"
            STATUS=1
        fi
    done

    # The test phase: rounds that alternate the modes (baseline first in odd rounds, patched
    # first in even ones), so that a machine slowing down or speeding up during the runs
    # weighs on both alike; the ratio is the median of the rounds' patched/baseline ratios.
    ratios=()
    for ((run = 1; run <= RUNS; run++)); do
        order=("${MODES[@]}")
        if ((run % 2 == 0 && ${#MODES[@]} == 2)); then order=("${MODES[1]}" "${MODES[0]}"); fi
        declare -A this=()
        for mode in "${order[@]}"; do
            [[ ${COMPILED[$mode]} == yes ]] || continue
            test_once "$c" "${WORK[$mode]}" "$mode" "$run"
            this[$mode]=$T_SECONDS
            TIMES[$mode]+="$T_SECONDS "
        done
        if [[ -n ${this[baseline]:-} && -n ${this[patched]:-} ]]; then
            ratios+=("$(awk -v a="${this[patched]}" -v b="${this[baseline]}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')")
        fi
        unset this
    done
    paired_ratio=-
    [[ ${#ratios[@]} == 0 ]] || paired_ratio=$(echo "${ratios[*]}" | median)

    # The crate's table, and results.tsv.
    printf '  %-9s %-8s %8s %7s %7s %8s %12s %7s %8s %s\n' mode compiled build_s passed failed \
        ignored "test_s(med)" ratio reports compat_used
    for mode in "${MODES[@]}"; do
        R_PASSED=- R_FAILED=- R_IGNORED=- R_REPORTS=- R_NOTE=${SETUP_NOTE[$mode]:-} tt=- each=-
        if [[ ${COMPILED[$mode]} == yes ]]; then
            summarize "$c" "$mode"
            [[ $R_VERDICT == ok ]] || STATUS=1
            tt=$(echo "${TIMES[$mode]}" | median)
            each=$(echo "${TIMES[$mode]}" | tr ' ' '\n' | grep -v '^$' | sort -g | tr '\n' ' ' | sed 's/ $//')
        fi
        ratio=-
        if [[ $mode == patched && $tt != - ]]; then
            if [[ $paired_ratio != - ]]; then
                ratio=$(printf '%.2fx' "$paired_ratio")
            else # --patched-only: against the latest recorded baseline, not paired
                base_t=$(awk -F'\t' -v c="$c" '$1 == c && $3 == "baseline" && $9 != "-" { t = $9 } END { print t }' "$RESULTS")
                if [[ -n $base_t ]]; then
                    ratio=$(awk -v a="$tt" -v b="$base_t" 'BEGIN { if (b > 0) printf "%.2fx*", a / b; else print "-" }')
                    R_NOTE+="${R_NOTE:+; }* ratio to an earlier baseline run, not paired"
                fi
            fi
        fi
        printf '  %-9s %-8s %8s %7s %7s %8s %12s %7s %8s %s\n' "$mode" "${COMPILED[$mode]}" \
            "${BUILD[$mode]}" "$R_PASSED" "$R_FAILED" "$R_IGNORED" "$tt" "$ratio" "$R_REPORTS" "${USED[$mode]}"
        [[ -z $R_NOTE ]] || echo "    note: $R_NOTE"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$v" "$mode" \
            "${COMPILED[$mode]}" "${BUILD[$mode]}" "$R_PASSED" "$R_FAILED" "$R_IGNORED" "$tt" "$each" \
            "$ratio" "$R_REPORTS" "${USED[$mode]}" "$R_NOTE" >>"$RESULTS"
        if is_probe_crate "$c" && [[ ${COMPILED[$mode]} == yes ]]; then
            run_probe "$c" "${WORK[$mode]}" "$mode"
            echo "    inverted-order probe ($mode): $P_VERDICT: $P_DETAIL"
            [[ $P_VERDICT == ok ]] || STATUS=1
        fi
    done
    unset WORK READY USED BUILD COMPILED TIMES SETUP_NOTE PROBE
done
echo
echo "results appended to $RESULTS; logs in $SCRATCH/logs/"
exit $STATUS
