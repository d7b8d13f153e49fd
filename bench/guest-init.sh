#!/bin/bash
# PID 1 of a bench guest after switch_root (see initramfs-init): run the
# command file the host left in the results dir, record its exit code and the
# kernel log, power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/shm /dev/pts
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
echo 1 > /proc/sys/kernel/sysrq
R=/run/results
cd /tmp
bash "$R/cmd.sh" 2>&1 | tee "$R/out.log"
echo "${PIPESTATUS[0]}" > "$R/rc"
dmesg > "$R/dmesg.txt"
sync
umount "$R"
echo o > /proc/sysrq-trigger
sleep 10
