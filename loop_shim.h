/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loop_shim - a loop block driver with the loop(4) ioctl ABI that knows
 * nothing about the front end creating its devices. The front end hands
 * each device an owner pointer, the user namespace whose CAP_SYS_ADMIN
 * stands in for the initial namespace's, and its callbacks.
 */
#ifndef LOOP_SHIM_H
#define LOOP_SHIM_H

#include <linux/types.h>
#include <linux/uidgid.h>

struct cgroup;
struct file;
struct loop_dev;
struct user_namespace;

/**
 * enum loop_dev_charge - what a bound device holds that its owner counts
 * @LOOP_DEV_CHARGE_PARTSCAN: it scans partitions (LOOP_CONFIGURE or
 *	LOOP_SET_STATUS asking for LO_FLAGS_PARTSCAN); refused, the call
 *	fails
 * @LOOP_DEV_CHARGE_DIRTY: its page cache holds a share of the host's dirty
 *	threshold; refused, the device binds without one and its writers
 *	wait for the writeback of what they dirty
 * @LOOP_DEV_NR_CHARGES: how many there are
 */
enum loop_dev_charge {
	LOOP_DEV_CHARGE_PARTSCAN,
	LOOP_DEV_CHARGE_DIRTY,
	LOOP_DEV_NR_CHARGES
};

/**
 * struct loop_dev_ops - what the owner of a device is told and asked
 * @partitions_changed: the device's partitions changed: after the scan of
 *	LOOP_CONFIGURE, LOOP_SET_STATUS or LOOP_CHANGE_FD and the drop when
 *	the device is cleared, and for each partition the block layer adds
 *	or deletes by itself (BLKPG, BLKRRPART, a rescan on open, the drop of
 *	an autoclear device's last close). With @can_block no lock of the
 *	driver or the block layer is held and the owner may sync at once;
 *	without it the disk's open_mutex (and maybe the block class's mutex)
 *	is held and the owner must defer. Never called once the device is
 *	orphaned.
 * @released: the device is gone for good (gendisk freed, minor released):
 *	the owner drops what it holds for it (charge, references). Called in
 *	the task that drops the last disk reference, which may sleep, with
 *	no lock of the driver held.
 * @check_backing: may @file back the device? 0, or the errno that
 *	LOOP_SET_FD, LOOP_CONFIGURE or LOOP_CHANGE_FD returns. Called with
 *	the device's locks held: it must not sleep on I/O.
 * @charge: the device is about to hold @what (enum loop_dev_charge): 0, or
 *	an errno, which for LOOP_DEV_CHARGE_PARTSCAN the call fails with.
 * @uncharge: a device that @charge let hold @what stopped holding it (it
 *	was unbound), or the call that asked failed after all. Both are
 *	called with or without the device's lock held and must not sleep.
 */
struct loop_dev_ops {
	void (*partitions_changed)(struct loop_dev *ldev, bool can_block);
	void (*released)(struct loop_dev *ldev);
	int (*check_backing)(struct loop_dev *ldev, struct file *file);
	int (*charge)(struct loop_dev *ldev, enum loop_dev_charge what);
	void (*uncharge)(struct loop_dev *ldev, enum loop_dev_charge what);
};

/**
 * struct loop_dev_config - a new device, as loop_dev_create() makes it
 * @disk_name: the gendisk's name, unique system-wide
 * @number: lo_number reported by LOOP_GET_STATUS
 * @user_ns: whose CAP_SYS_ADMIN stands in for the initial namespace's in
 *	the driver's checks; not pinned, the owner keeps it alive
 * @tenant: the cgroup (of the default hierarchy) whose tasks, and those of
 *	its descendants, may open the disk; anybody else needs CAP_SYS_ADMIN
 *	in the initial user namespace. NULL lets everybody the node's mode
 *	and the device cgroup let in. Not pinned, the owner keeps it alive
 * @uid: owner of the disk's sysfs directory
 * @gid: group of the disk's sysfs directory
 * @ops: the owner's callbacks
 * @owner: returned by loop_dev_owner()
 */
struct loop_dev_config {
	const char *disk_name;
	int number;
	struct user_namespace *user_ns;
	struct cgroup *tenant;
	kuid_t uid;
	kgid_t gid;
	const struct loop_dev_ops *ops;
	void *owner;
};

/* Partition numbers a device can have, the whole disk's 0 included. */
#define LOOP_DEV_MAX_PARTS	256

/**
 * loop_dev_create() - create an unbound loop device and add its disk
 * @cfg: the device's name, owner and policy; copied, need not outlive the
 *	call
 *
 * Return: the device, or an ERR_PTR(): -ENOSPC when the driver's minors are
 * used up, -ENOMEM, or what add_disk() returned. The device lives until
 * loop_dev_destroy(), loop_dev_discard() or loop_dev_orphan() and its last
 * close; then @cfg->ops->released is called.
 */
struct loop_dev *loop_dev_create(const struct loop_dev_config *cfg);

/**
 * loop_dev_owner() - the owner of a device
 * @ldev: the device
 *
 * Return: @cfg->owner as given to loop_dev_create().
 */
void *loop_dev_owner(struct loop_dev *ldev);

/**
 * loop_dev_devt() - the whole disk's device number
 * @ldev: the device
 *
 * Return: the device number, free for reuse once the device is gone.
 */
dev_t loop_dev_devt(struct loop_dev *ldev);

/**
 * loop_dev_serial() - a device's serial number
 * @ldev: the device
 *
 * Return: a number no other device shares while the module is loaded,
 * unlike the device number, which a new device may reuse.
 */
unsigned long loop_dev_serial(struct loop_dev *ldev);

/**
 * loop_dev_file_is() - is @file partition @partno of device @serial?
 * @file: an open block device, of any driver
 * @serial: loop_dev_serial() of the device expected
 * @partno: 0 for the whole disk
 *
 * Return: true if it is.
 */
bool loop_dev_file_is(struct file *file, unsigned long serial, int partno);

/**
 * loop_dev_is_unbound() - has the device no backing file?
 * @ldev: the device
 *
 * Return: true if unbound when looked at; it may be bound a moment later.
 */
bool loop_dev_is_unbound(struct loop_dev *ldev);

/**
 * loop_dev_partitions() - the device numbers of the device's partitions
 * @ldev: the device
 * @devts: filled at [partno] for every partition below @max; other
 *	entries are left as they are
 * @max: entries in @devts
 *
 * Waits for the disk's open_mutex killably: the block layer holds it
 * while it reads a partition table, which a stalled backing file may
 * make last.
 *
 * Return: the highest partition number seen, 0 for none; -EINTR if a
 * fatal signal came first.
 */
int loop_dev_partitions(struct loop_dev *ldev, dev_t *devts, int max);

/**
 * loop_dev_partitions_nowait() - loop_dev_partitions() if nobody holds the
 *	disk's open_mutex
 * @ldev: the device
 * @devts: as for loop_dev_partitions()
 * @max: entries in @devts
 *
 * Return: as loop_dev_partitions(), or -EAGAIN if open_mutex is held.
 */
int loop_dev_partitions_nowait(struct loop_dev *ldev, dev_t *devts, int max);

/**
 * loop_dev_claim_for_removal() - reserve an unused device for removal
 * @ldev: the device
 *
 * Return: 0, after which the device can only be destroyed; -EBUSY if it is
 * bound or open, or one of its ioctls is under way; -EINTR on a fatal
 * signal.
 */
int loop_dev_claim_for_removal(struct loop_dev *ldev);

/**
 * loop_dev_destroy() - delete a claimed device's disk and drop it
 * @ldev: the device, claimed by loop_dev_claim_for_removal()
 */
void loop_dev_destroy(struct loop_dev *ldev);

/**
 * loop_dev_orphan() - the owner is going away
 * @ldev: the device
 *
 * No callback but @released follows. An unopened device is cleared and
 * destroyed now; an open one on its last close.
 */
void loop_dev_orphan(struct loop_dev *ldev);

/**
 * loop_dev_discard() - the owner failed to hand a new device out
 * @ldev: the device
 *
 * No callback but @released follows. An unbound device's disk is deleted
 * now even if open (only the host can have opened it), so its name can be
 * used again at once; one the host bound meanwhile is orphaned.
 */
void loop_dev_discard(struct loop_dev *ldev);

/**
 * loop_dev_init() - register the block driver
 *
 * Return: 0, or a negative errno.
 */
int loop_dev_init(void);

/**
 * loop_dev_exit() - unregister the block driver
 *
 * Waits until every device is gone: the owner has orphaned or destroyed
 * them all, and the last of them may still be on its way out.
 */
void loop_dev_exit(void);

#endif /* LOOP_SHIM_H */
