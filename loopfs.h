/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loopfs - a filesystem whose every mount is a private pool of loop
 * devices: its own loop-control node and its own loop<N> block nodes.
 */
#ifndef LOOPFS_H
#define LOOPFS_H

#include <linux/kref.h>
#include <linux/kdev_t.h>
#include <linux/mutex.h>
#include <linux/uidgid.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "loopfs_abi.h"

/* Indices per instance, as many as the in-tree driver has minors for. */
#define LOOPFS_MAX_INDEX	(MINORMASK + 1)

struct dentry;
struct loop_dev;
struct super_block;
struct user_namespace;

/*
 * One per superblock. The superblock holds a reference, and so does
 * every device, so a device that outlives its mount finds valid state.
 */
struct loopfs_instance {
	struct kref ref;
	int id;				/* names the devices system-wide */
	struct user_namespace *user_ns;	/* pinned until the last put */
	kuid_t root_uid;		/* the namespace's root, or global */
	kgid_t root_gid;

	/*
	 * Protects devices, nr_devices, max and sb. Taken after the root
	 * directory's inode lock, before the view directory's inode lock
	 * and before any device's locks.
	 */
	struct mutex lock;
	struct xarray devices;		/* index -> struct loopfs_device */
	unsigned int nr_devices;
	unsigned int max;		/* mount option max= */
	unsigned int mount_max;		/* highest max= the owner may set */
	struct super_block *sb;		/* NULL once the superblock dies */
	struct dentry *view;		/* the /sys/block view directory */

	struct work_struct sync_work;	/* deferred partition node sync */
};

/* A loop device as its instance sees it. */
struct loopfs_device {
	struct loopfs_instance *instance;
	struct loop_dev *ldev;
	int index;
	int nr_part_nodes;		/* loop<N>p1.. nodes made so far */
};

/*
 * Per-user device limits (limits.c). Each device an instance creates is
 * charged to the root of the instance's user namespace in that namespace
 * and to the owner of every namespace above it, each level within the
 * limit that level's namespace has set in /proc/sys/user/max_loop_devices.
 */

/**
 * loopfs_charge() - charge one device to @uid in @ns and its ancestors
 * @ns: the user namespace the device is created in
 * @uid: the user charged at that level (the namespace's root)
 *
 * Return: 0, -ENOSPC when any level is at its limit (nothing is charged
 * then), or -ENOMEM.
 */
int loopfs_charge(struct user_namespace *ns, kuid_t uid);

/**
 * loopfs_uncharge() - undo one successful loopfs_charge(@ns, @uid)
 * @ns: as given to loopfs_charge()
 * @uid: as given to loopfs_charge()
 */
void loopfs_uncharge(struct user_namespace *ns, kuid_t uid);

/**
 * loopfs_charge_partscan() - count one more partition-scanning device
 * @ns: as given to loopfs_charge() for the device
 * @uid: as given to loopfs_charge() for the device
 *
 * Counted against the host user the device is charged to in the initial
 * namespace, within the module parameter container_partscan_devices.
 *
 * Return: 0, or -ENOSPC at the limit.
 */
int loopfs_charge_partscan(struct user_namespace *ns, kuid_t uid);

/**
 * loopfs_uncharge_partscan() - undo one loopfs_charge_partscan()
 * @ns: as given to loopfs_charge_partscan()
 * @uid: as given to loopfs_charge_partscan()
 */
void loopfs_uncharge_partscan(struct user_namespace *ns, kuid_t uid);

int loopfs_limits_init(void);
void loopfs_limits_exit(void);

#endif /* LOOPFS_H */
