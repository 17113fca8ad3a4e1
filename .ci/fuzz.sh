#!/usr/bin/env bash
# Fuzzes every Fuzz target of the module for a bounded time each, and
# prints the executions of each and their total. The seed corpora (f.Add
# and testdata/fuzz/<target>) already run with every `go test`; this is the
# bounded search beyond them.
#
#   bash .ci/fuzz.sh            # PARLEY_FUZZTIME (default 5s) per target
#   PARLEY_FUZZTIME=2m bash .ci/fuzz.sh
#
# A failure leaves its input in the package's testdata/fuzz/<target>/,
# where it becomes a seed (commit it with the fix).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${PARLEY_FUZZTIME:-5s}

total=0
count=0
failed=()
# "dir target" for each func FuzzX(f *testing.F) of a _test.go file.
while read -r file name; do
  dir=./$(dirname "$file")
  # Go 1.26's fuzz coordinator may fail a target with a bare "context
  # deadline exceeded" when -fuzztime ends while a worker is mid-input
  # (go.dev/issue/75804, fixed in Go 1.27): no input is written and nothing
  # failed. Such a run is tried again, at most twice; any other failure,
  # and always one that wrote an input, fails at once.
  for attempt in 1 2 3; do
    if out=$(go test "$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" 2>&1); then
      break
    fi
    if [ "$attempt" -lt 3 ] && printf '%s\n' "$out" | grep -q 'context deadline exceeded' &&
      ! printf '%s\n' "$out" | grep -q -e 'Failing input written' -e 'panic:' -e '_test.go:[0-9]'; then
      printf '  %-28s %-22s the fuzz coordinator hit its deadline mid-input (go.dev/issue/75804): again\n' "$dir" "$name" >&2
      continue
    fi
    out="FAILED"$'\n'"$out"
    break
  done
  if [ "${out%%$'\n'*}" = FAILED ]; then
    printf '%s\n' "$out" | tail -30 >&2
    failed+=("$dir $name")
    continue
  fi
  execs=$(printf '%s\n' "$out" | sed -n 's/.*execs: \([0-9]*\).*/\1/p' | tail -1)
  execs=${execs:-0}
  printf '  %-28s %-22s %10s executions\n' "$dir" "$name" "$execs"
  total=$((total + execs))
  count=$((count + 1))
done < <(grep -H -o '^func Fuzz[A-Za-z0-9_]*(f \*testing.F)' $(git ls-files '*_test.go') |
  sed 's/:func \(Fuzz[A-Za-z0-9_]*\)(.*/ \1/' | sort)

echo "fuzz: $count targets, $total executions in all ($FUZZTIME each)"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
