# The checks every end-to-end script counts, whatever cluster it runs on:
#   . e2e/checks.sh; check NAME CMD...; ...; finish
# check runs CMD and counts it passed or failed (a failure shows CMD's
# output, and calls on_check_failed, where the script defines it); each
# line ends with the check's wall time, so a slow one shows in CI's log;
# until_true waits for a condition; finish prints "N passed, N failed"
# and fails when any check did.
passed=0
failed=0

check() { # check NAME COMMAND...: the command must succeed
	# Its locals have names no check uses: bash's scoping would show them
	# to the command in place of the script's own variables.
	local _check_name=$1 _check_said _check_t0=$SECONDS
	shift
	if _check_said=$("$@" 2>&1); then
		passed=$((passed + 1))
		echo "ok   $_check_name ($((SECONDS - _check_t0)) s)"
	else
		failed=$((failed + 1))
		echo "FAIL $_check_name ($((SECONDS - _check_t0)) s)"
		printf '%s\n' "$_check_said" | sed 's/^/     /'
		! declare -F on_check_failed > /dev/null || on_check_failed
	fi
}

until_true() { # until_true SECONDS WHAT CMD...: CMD succeeds within SECONDS, tried every $POLL_EVERY s (0.1)
	local end=$((SECONDS + $1)) what=$2
	shift 2
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || { echo "timed out waiting for $what"; return 1; }
		sleep "${POLL_EVERY:-0.1}"
	done
}

finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
