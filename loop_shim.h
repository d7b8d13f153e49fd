/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loop_shim - a loop block driver with the loop(4) ioctl ABI that knows
 * nothing about the front end creating its devices. The front end hands
 * each device an owner pointer, the user namespace whose CAP_SYS_ADMIN
 * stands in for the initial namespace's, and two callbacks.
 */
#ifndef LOOP_SHIM_H
#define LOOP_SHIM_H

#include <linux/types.h>
#include <linux/uidgid.h>

struct file;
struct loop_dev;
struct user_namespace;

struct loop_dev_ops {
	/*
	 * The device's partitions changed (scan after bind, clear). With
	 * @can_block, no shim or block layer lock is held and the owner may
	 * sync up at once; without it, disk->open_mutex is held and the
	 * owner must defer. Never called once the device is orphaned.
	 */
	void (*partitions_changed)(struct loop_dev *ldev, bool can_block);
	/*
	 * The device is gone for good: gendisk freed, minor released. The
	 * owner drops what it holds for the device (charge, references).
	 */
	void (*released)(struct loop_dev *ldev);
	/*
	 * May @file back the device? 0 or the errno for LOOP_SET_FD,
	 * LOOP_CONFIGURE and LOOP_CHANGE_FD to return.
	 */
	int (*check_backing)(struct loop_dev *ldev, struct file *file);
};

struct loop_dev_config {
	const char *disk_name;		/* unique system-wide */
	int number;			/* lo_number reported to userspace */
	struct user_namespace *user_ns;	/* ns_capable() checks; not pinned */
	kuid_t uid;			/* owner of the sysfs directory */
	kgid_t gid;
	const struct loop_dev_ops *ops;
	void *owner;
};

#define LOOP_SHIM_MAX_PARTS	256

struct loop_dev *loop_dev_create(const struct loop_dev_config *cfg);
void *loop_dev_owner(struct loop_dev *ldev);
dev_t loop_dev_devt(struct loop_dev *ldev);
/* Never the same for two devices while the module is loaded. */
unsigned long loop_dev_serial(struct loop_dev *ldev);
/* Is @file, an open block device, partition @partno of device @serial? */
bool loop_shim_file_is(struct file *file, unsigned long serial, int partno);
bool loop_dev_is_unbound(struct loop_dev *ldev);
int loop_dev_partitions(struct loop_dev *ldev, dev_t *devts, int max);

/* -EBUSY if bound or open; otherwise the device may only be destroyed. */
int loop_dev_claim_for_removal(struct loop_dev *ldev);
void loop_dev_destroy(struct loop_dev *ldev);
/* The owner is going away: destroy now if unopened, else at last close. */
void loop_dev_orphan(struct loop_dev *ldev);

int loop_shim_init(void);
void loop_shim_exit(void);

#endif /* LOOP_SHIM_H */
