#!/usr/bin/env bash
# Fuzzes every target until it has run at least MIN inputs (default 10^6),
# in rounds of ROUND seconds on JOBS processes (default 2: the two cores of
# the reference machine), keeping each target's corpus between rounds.
# Prints one line per target: executions, seconds, coverage, features,
# corpus size and the rounds' exit status; logs in target/fuzz-depth/.
#   scripts/fuzz_depth.sh [MIN] [ROUND] [JOBS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
min=${1:-1000000}
round=${2:-300}
jobs=${3:-2}
shift $(( $# < 3 ? $# : 3 ))
targets=("$@")
((${#targets[@]})) || targets=(parse validate lowering comfyui textproto recipe signature)
logs=target/fuzz-depth
mkdir -p "$logs"
printf 'target\texecutions\tseconds\tcoverage\tfeatures\tcorpus\tresult\n'
for target in "${targets[@]}"; do
    total=0 seconds=0 n=0 result=ok last=""
    while ((total < min)); do
        n=$((n + 1))
        log="$logs/$target.$n.log"
        start=$(date +%s)
        scripts/fuzz.sh "$target" "$round" "$jobs" >"$log" 2>&1 || result="exit $? (see $log)"
        seconds=$((seconds + $(date +%s) - start))
        last=$(grep -E '^#[0-9]+:' "$log" | tail -n 1)
        runs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
        total=$((total + ${runs:-0}))
        [ "$result" = ok ] && [ -n "$runs" ] || break
    done
    cov=$(sed -E 's/.* cov: ([0-9]+).*/\1/' <<<"$last")
    ft=$(sed -E 's/.* ft: ([0-9]+).*/\1/' <<<"$last")
    corp=$(sed -E 's/.* corp: ([0-9]+).*/\1/' <<<"$last")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$total" "$seconds" "$cov" "$ft" "$corp" "$result"
done
