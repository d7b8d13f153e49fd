# shellcheck shell=bash
# Sourced by the guest-side PID 1 scripts (run-suites.sh, run-command.sh).

# Block in getrandom() (via /dev/random) until the CRNG is seeded, then give
# the switch of its static key time to finish: the key is patched with int3
# text poking, which QEMU's TCG does not reliably handle while another vCPU
# runs the patched code (a guest died of an Oops at urandom_read_iter that
# way).  With random.trust_cpu=on and virtio-rng this is normally over during
# boot; the wait makes sure of it.
wait_for_crng() {
	modprobe -q virtio_rng 2>/dev/null
	timeout 60 head -c 1 /dev/random >/dev/null || return 1
	sleep 1
}

# Power the guest off; run-guest.sh on the host reads what was left in the
# results share.
power_off() {
	sync
	busybox poweroff -f
	sleep 60
}
