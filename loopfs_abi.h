/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * What loopfs shows userspace, in one place for the module, its tools and
 * its tests: the filesystem type and magic, the names of the nodes in an
 * instance and of the disks behind them, and the per-user limit's sysctl.
 * Plain preprocessor constants, so that kernel and userspace code include
 * this header alike.
 */
#ifndef LOOPFS_ABI_H
#define LOOPFS_ABI_H

/* The filesystem type to mount; statfs() reports the magic as f_type. */
#define LOOPFS_FSTYPE		"loop"
#define LOOPFS_SUPER_MAGIC	0x6c6f6f71

/* Nodes in an instance's root directory: index, then partition number. */
#define LOOPFS_CONTROL_NAME	"loop-control"
#define LOOPFS_NODE_FMT		"loop%d"
#define LOOPFS_PART_NODE_FMT	"loop%dp%d"

/*
 * The disk behind a node, as /sys/block and /proc/partitions name it:
 * instance id (unique system-wide while the instance lives), then index.
 */
#define LOOPFS_DISK_FMT		"loopfs%d-%d"

/*
 * The instance's view of /sys/block, a directory in its root: a directory
 * per device, named LOOPFS_NODE_FMT, standing for the disk's sysfs
 * directory LOOPFS_SYSFS_DISK_FMT. Each of the disk's entries is there as
 * a symlink to it (relative, as sysfs's own links are, so that it resolves
 * once the view is bound over /sys/block), partitions named as their nodes
 * (LOOPFS_PART_NODE_FMT) rather than as the host names them.
 */
#define LOOPFS_VIEW_NAME	"block"
#define LOOPFS_SYSFS_DISK_FMT	"devices/virtual/block/" LOOPFS_DISK_FMT

/*
 * The instance's view of /sys/dev/block, a directory in its root: for each
 * disk and partition of the instance, "MAJ:MIN", a symlink to
 * "../../block/loop<N>" or "../../block/loop<N>/loop<N>p<M>", that is into
 * the view of /sys/block once both are bound over sysfs.
 */
#define LOOPFS_DEV_VIEW_NAME	"dev-block"

/*
 * Devices each user may create, counted across all of its instances and
 * those of the user namespaces it owns; each user namespace reads and
 * sets its own value.
 */
#define LOOPFS_SYSCTL_DIR	"user"
#define LOOPFS_SYSCTL_NAME	"max_loop_devices"
#define LOOPFS_SYSCTL_PATH	"/proc/sys/user/max_loop_devices"
#define LOOPFS_DEFAULT_LIMIT	255

#endif /* LOOPFS_ABI_H */
