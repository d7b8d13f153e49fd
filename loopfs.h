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

/*
 * Buffer sizes for the names and paths loopfs prints, from the formats of
 * loopfs_abi.h: the format's own size (its NUL and its conversions
 * counted) and at most 11 characters for each number ("-2147483648").
 */
#define LOOPFS_FMT_SIZE(fmt, numbers)	(sizeof(fmt) + 11 * (numbers))
/* loop<N> and loop<N>p<M>: the nodes and the view's entries */
#define LOOPFS_NODE_NAME_SIZE	LOOPFS_FMT_SIZE(LOOPFS_PART_NODE_FMT, 2)
/* loopfs<id>-<N>: a disk's host name */
#define LOOPFS_DISK_NAME_SIZE	LOOPFS_FMT_SIZE(LOOPFS_DISK_FMT, 2)
/* A disk's sysfs directory, relative to /sys */
#define LOOPFS_SYSFS_DISK_SIZE	LOOPFS_FMT_SIZE(LOOPFS_SYSFS_DISK_FMT, 2)
/*
 * An entry of that directory: a partition's host name, loopfs<id>-<N>p<M>,
 * is the longest (a disk's attributes have names under 20 characters).
 */
#define LOOPFS_SYSFS_ENTRY_SIZE	LOOPFS_FMT_SIZE(LOOPFS_DISK_FMT "p%d", 3)
/* "/block/loop<N>[/loop<N>p<M>]": a device in the view of /sys/block */
#define LOOPFS_VIEW_PATH_SIZE \
	LOOPFS_FMT_SIZE("/" LOOPFS_VIEW_NAME "/" LOOPFS_NODE_FMT "/" \
			LOOPFS_PART_NODE_FMT, 3)
/* "MAJ:MIN": an entry of the view of /sys/dev/block */
#define LOOPFS_DEVT_NAME_SIZE	LOOPFS_FMT_SIZE("%u:%u", 2)

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

struct mnt_idmap;

/*
 * The filesystem's three files: loopfs.c (instances, nodes, loop-control,
 * the superblock), loopfs_views.c (the views of /sys/block and
 * /sys/dev/block) and loopfs_uevent.c (uevents in the mounter's network
 * namespace). The views and the uevents serve loopfs.c, and call back only
 * into the functions of loopfs.c below.
 */

/**
 * loopfs_instance_put() - drop a reference on @inst, freeing it with the last
 * @inst: the instance
 */
void loopfs_instance_put(struct loopfs_instance *inst);

/**
 * loopfs_new_inode() - a new inode of the instance, owned by its root
 * @sb: the instance's superblock
 * @mode: the inode's type and permissions
 *
 * Return: the inode, or NULL when out of memory.
 */
struct inode *loopfs_new_inode(struct super_block *sb, umode_t mode);

/**
 * loopfs_add_entry() - give @inode a name in @dir, as a creation would
 * @dir: the directory, whose inode lock the caller holds
 * @name: the name
 * @inode: the inode, dropped on failure
 *
 * The entry stays in the dcache until it is removed or the superblock
 * ends, and @dir's watchers hear of it.
 *
 * Return: the entry (the caller holds no reference), or an ERR_PTR():
 * -EEXIST when @name is taken.
 */
struct dentry *loopfs_add_entry(struct dentry *dir, const char *name,
				struct inode *inode);

/**
 * loopfs_remove_entry() - remove @name from @dir, as an unlink would
 * @dir: the directory, whose inode lock the caller holds
 * @name: the name
 *
 * Return: whether @name was there.
 */
bool loopfs_remove_entry(struct dentry *dir, const char *name);

/**
 * loopfs_create() - ->create of the instance's directories: always -EPERM
 * @idmap: the mount's idmapping
 * @dir: the directory
 * @dentry: the name asked for
 * @mode: the mode asked for
 * @excl: O_EXCL
 *
 * Only loopfs makes entries in its directories. Without ->create the VFS
 * would say EACCES, which reads as a permission a user could be given.
 *
 * Return: -EPERM.
 */
int loopfs_create(struct mnt_idmap *idmap, struct inode *dir,
		  struct dentry *dentry, umode_t mode, bool excl);

/**
 * loopfs_views_init() - mount the module's own sysfs, which the views read
 *
 * Return: 0 or a negative errno.
 */
int loopfs_views_init(void);

/** loopfs_views_exit() - undo loopfs_views_init() */
void loopfs_views_exit(void);

/**
 * loopfs_add_view() - the empty views of a new instance's root directory
 * @sb: the instance's superblock, its root directory locked
 *
 * Return: 0 or a negative errno; what was made goes with the superblock.
 */
int loopfs_add_view(struct super_block *sb);

/**
 * loopfs_add_view_dir() - the loop<N> directory of device @index in the view
 * @inst: the instance, its lock held
 * @index: the device's index
 *
 * Return: 0 or a negative errno.
 */
int loopfs_add_view_dir(struct loopfs_instance *inst, int index);

/**
 * loopfs_remove_view_dir() - remove device @index's loop<N> directory
 * @inst: the instance, its lock held
 * @index: the device's index
 */
void loopfs_remove_view_dir(struct loopfs_instance *inst, int index);

/**
 * loopfs_view_path() - where a device or partition is in the view
 * @buf: the path's buffer
 * @len: its size
 * @index: the device's index
 * @partno: the partition, 0 for the disk
 *
 * "block/loop<N>[/loop<N>p<M>]": relative to /sys once the view is bound
 * over /sys/block.
 */
void loopfs_view_path(char *buf, size_t len, int index, int partno);

/**
 * loopfs_uevent_init() - the workqueue that sends the instances' uevents
 *
 * Return: 0 or -ENOMEM.
 */
int loopfs_uevent_init(void);

/** loopfs_uevent_exit() - send what is queued and undo loopfs_uevent_init() */
void loopfs_uevent_exit(void);

/**
 * loopfs_uevent_instance_init() - the uevent state of a new instance
 * @inst: the instance, made by the mounter, who is current
 *
 * The instance announces its devices in the mounter's network namespace
 * when the kernel sends that namespace no disk uevents and the mounter
 * holds CAP_SYS_ADMIN over its owner; else it announces nothing.
 */
void loopfs_uevent_instance_init(struct loopfs_instance *inst);

/**
 * loopfs_uevent() - announce a disk or partition of @inst
 * @inst: the instance
 * @action: "add" or "remove"
 * @index: the device's index
 * @partno: the partition, 0 for the disk
 * @devt: its device number
 *
 * Queued and sent in order by a worker; dropped beyond the rate
 * container_uevent_rate allows, or when out of memory.
 */
void loopfs_uevent(struct loopfs_instance *inst, const char *action, int index,
		   int partno, dev_t devt);

#endif /* LOOPFS_H */
