# Extended regexes (grep -E), one a line: a kernel log line matching any of
# them fails the run.  Used by the guest after every suite and by the host on
# the whole serial log.
WARNING:
BUG:
Oops
general protection fault
Kernel panic
kernel BUG
possible circular locking
possible recursive locking
INFO: task .* blocked
KASAN
UBSAN
refcount_t:
list_(add|del) corruption
Call Trace:
# Block-layer errors of a stock loop or loopfs device (loop<N>, loopfs<ID>-<N>,
# partitions too): the status line blk-mq prints for a failed request
# ("I/O error, dev loop0, sector ..."; other statuses such as "critical
# medium error" read the same), the buffer cache's line for a failed page
# read or write, and the older kernels' blk_update_request form.  A suite
# that provokes such errors on purpose declares the lines it expects with
# "# loopfs-expect-log: REGEX" near its top (see logscan.sh --expected).
(I/O|critical medium|critical target|critical space allocation|critical nexus|recoverable transport|protection|timeout) error, dev loop
Buffer I/O error on dev loop
blk_update_request: .*error.*dev loop
