# Sourced by the benchmark scripts that run upstream's shm provider.
#
# Upstream's shm names its segment /dev/shm/<pid>:<n>:<n> and refuses to
# enable an endpoint (fi_enable: EBUSY) when that name exists. A run killed
# by a timeout leaves its segment behind, and a later process that happens
# to get the same pid then fails. clean_stale_shm removes the segments of
# that form whose process no longer exists (it never touches a live one).
clean_stale_shm() {
	local f pid
	for f in /dev/shm/[0-9]*:[0-9]*:[0-9]*; do
		[ -e "$f" ] || continue
		pid=${f#/dev/shm/}
		pid=${pid%%:*}
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f -- "$f" && echo "removed upstream's stale segment $f (pid $pid is gone)" >&2
		fi
	done
	return 0
}
