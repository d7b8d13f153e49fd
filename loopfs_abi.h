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
 * The instance's view of /sys/block, a directory in its root: LOOPFS_NODE_FMT
 * names, each a symlink to LOOPFS_VIEW_TARGET_FMT (relative, as sysfs's own
 * entries are, so it resolves once the directory is bound over /sys/block).
 */
#define LOOPFS_VIEW_NAME	"block"
#define LOOPFS_VIEW_TARGET_FMT	"../devices/virtual/block/" LOOPFS_DISK_FMT

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
