#!/usr/bin/env bash
# Runs each test program given as an argument, then prints one summary
# line "N passed, N failed" over all of them, after a line naming how many
# cmocka tests were skipped, if any (the GPU tests without a GPU). A program reports either as a
# cmocka binary does or with a last line "N passed, N failed" of its own (the
# e2e runners). One that crashes or exits non-zero without either counts as
# one failure. Each program's wall time follows its output, so that a slow
# one shows in CI's log (nothing here depends on it).
set -u
passed=0
failed=0
skipped=0
for t in "$@"; do
	echo "== $(basename "$t")"
	t0=$SECONDS
	out=$("$t" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	echo "== $(basename "$t") took $((SECONDS - t0)) s"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' | tail -n 1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' | tail -n 1)
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:/\1/p' | tail -n 1)
	skipped=$((skipped + ${s:-0}))
	if [ -z "$p" ] && [ -z "$f" ]; then
		last=$(printf '%s\n' "$out" | tail -n 1)
		p=$(printf '%s\n' "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
		f=$(printf '%s\n' "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
		[ "$f" = 0 ] && f=
	fi
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
		echo "$(basename "$t"): exited $rc without a summary"
		failed=$((failed + 1))
	fi
done
[ "$skipped" -gt 0 ] && echo "$skipped skipped (each says why above)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
