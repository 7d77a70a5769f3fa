#!/usr/bin/env bash
# Runs each cmocka test binary given as an argument, then prints one summary
# line "N passed, N failed" over all of them. A binary that crashes or exits
# non-zero without a cmocka summary counts as one failure.
set -u
passed=0
failed=0
for t in "$@"; do
	echo "== $(basename "$t")"
	out=$("$t" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' | tail -n 1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' | tail -n 1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
		echo "$(basename "$t"): exited $rc without a cmocka summary"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
