#!/bin/bash
# Guest side of `make demo` (run by tests/guest/run-command.sh): a
# container's view of loopfs, commands echoed.  A
# container-like mount namespace with its own /dev gets a private loopfs
# instance, points /dev/loop-control at it and uses plain util-linux tools;
# with the instance's view bound over /sys/block, losetup -a and lsblk list
# the container's device only. The stock loop devices of the "host" stay
# untouched.
set -uo pipefail

export PS4='$ '

scenario() {
	PS4='$ '
	set -ex
	mount -t tmpfs tmpfs /dev
	mkdir /dev/loopfs
	mount -t loop loop /dev/loopfs
	ls -l /dev/loopfs
	ln -sf /dev/loopfs/loop-control /dev/loop-control
	losetup -f
	ln -sf /dev/loopfs/loop0 /dev/loop0
	ls -l /dev/loopfs /dev/loop-control /dev/loop0

	mkdir -p /tmp/demo/content /mnt/disk
	echo "hello from an ext4 image on a private loop device" >/tmp/demo/content/hello
	truncate -s 32M /tmp/demo/disk.img
	mkfs.ext4 -q -d /tmp/demo/content /tmp/demo/disk.img
	mount -o loop /tmp/demo/disk.img /mnt/disk
	findmnt /mnt/disk
	losetup /dev/loop0
	ls /sys/block
	mount --bind /dev/loopfs/block /sys/block
	ls -l /sys/block
	losetup -a
	lsblk
	cat /mnt/disk/hello
	umount /mnt/disk
	umount /sys/block
	umount /dev/loopfs
	ls /dev/loopfs
}

echo "=== loopfs demo on $(uname -r)"
set -x
modprobe loop
insmod "$LOOPFS_KO"
ls /dev/loop*
losetup -l
set +x

echo
echo "=== in a new mount namespace with a private /dev:"
status=0
unshare -m --propagation private bash -c "$(declare -f scenario); scenario" || status=$?

echo
echo "=== back outside: the stock loop devices are untouched"
set -x
ls /dev/loop*
losetup -l
grep -E '^(loop|loopfs) ' /proc/modules
set +x
# Nothing of ours may be attached to a stock device.
if losetup -l -n | grep -q .; then
	echo "stock loop devices are in use: the demo leaked"
	status=1
fi

echo
if [ "$status" -eq 0 ]; then
	echo "=== loopfs demo: OK"
else
	echo "=== loopfs demo: FAILED (status $status)"
fi
exit "$status"
