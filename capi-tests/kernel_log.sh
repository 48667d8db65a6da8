# Sourced by the suites: what the kernel said about tasks it held while a
# test ran, for the report of a test that failed or timed out. On the AMD
# host of 2026-12-07 the kernel once held a stress process in mmap(2) for
# 115 s while it logged a workqueue lockup on both CPUs; a test that fails
# in such a window should say so, rather than leave it to be guessed.
#
#   mark=$(kernel_mark)          before the test
#   kernel_since "$mark"         after it: the kernel log's lines since then
#                                that report held tasks or CPUs, indented
#                                (nothing when the log is silent or not
#                                readable)

kernel_mark() {
	cut -d' ' -f1 /proc/uptime
}

kernel_since() {
	local lines
	lines=$(dmesg 2>/dev/null | awk -v t="$1" '
		match($0, /^\[ *[0-9]+\.[0-9]+\]/) {
			ts = substr($0, 2, RLENGTH - 2) + 0
			if (ts >= t && ($0 ~ /workqueue lockup|blocked for more than|soft lockup|hard LOCKUP|rcu.*(stall|self-detected)/))
				print
		}' | head -n 12) || true
	if [ -n "$lines" ]; then
		echo "the kernel logged, while it ran:"
		printf '%s\n' "$lines" | sed 's/^/    /'
	fi
}
