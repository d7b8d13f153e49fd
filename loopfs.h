/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loopfs - a filesystem whose every mount is a private pool of loop
 * devices: its own loop-control node and its own loop<N> block nodes.
 */
#ifndef LOOPFS_H
#define LOOPFS_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/kdev_t.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "loopfs_abi.h"

/* Indices per instance, as many as the in-tree driver has minors for. */
#define LOOPFS_MAX_INDEX	(MINORMASK + 1)

struct cgroup;
struct dentry;
struct loop_dev;
struct net;
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
	 * The mounter's cgroup: only its tasks (and those below it) and
	 * host root open the devices. Referenced until the last put.
	 */
	struct cgroup *tenant;

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
	atomic_t part_events;		/* partition changes reported */

	/*
	 * The mounter's network namespace when the kernel sends it no disk
	 * uevents (its owner is not the initial user namespace) and the
	 * mounter holds CAP_SYS_ADMIN over its owner, else NULL;
	 * uevent_lock protects the uevents waiting for uevent_work.
	 */
	struct net *net;
	spinlock_t uevent_lock;		/* protects uevents and the window */
	struct list_head uevents;
	unsigned long uevent_window;	/* jiffies the rate window opened */
	unsigned int uevents_in_window;
	struct work_struct uevent_work;
};

/* A loop device as its instance sees it. */
struct loopfs_device {
	struct loopfs_instance *instance;
	struct loop_dev *ldev;
	int index;
	int nr_part_nodes;		/* loop<N>p1.. nodes made so far */
};

/* The instance a superblock of loopfs holds. */
static inline struct loopfs_instance *loopfs_sb(const struct super_block *sb)
{
	return sb->s_fs_info;
}

#endif /* LOOPFS_H */
