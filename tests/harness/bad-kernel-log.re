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
