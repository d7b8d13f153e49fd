/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loopfs per-user limits (limits.c). Each device an instance creates is
 * charged to the root of the instance's user namespace in that namespace
 * and to the owner of every namespace above it, each level within the
 * limit that level's namespace has set in /proc/sys/user/max_loop_devices.
 */
#ifndef LOOPFS_LIMITS_H
#define LOOPFS_LIMITS_H

#include <linux/uidgid.h>

#include "loop_shim.h"

struct user_namespace;

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
 * loopfs_charge_host() - count one more device holding @what
 * @ns: as given to loopfs_charge() for the device
 * @uid: as given to loopfs_charge() for the device
 * @what: scanning partitions, or a share of the dirty threshold
 *
 * Counted against the host user the device is charged to in the initial
 * namespace, within the module parameter container_partscan_devices or
 * container_dirty_devices.
 *
 * Return: 0, or -ENOSPC at the limit.
 */
int loopfs_charge_host(struct user_namespace *ns, kuid_t uid,
		       enum loop_dev_charge what);

/**
 * loopfs_uncharge_host() - undo one loopfs_charge_host()
 * @ns: as given to loopfs_charge_host()
 * @uid: as given to loopfs_charge_host()
 * @what: as given to loopfs_charge_host()
 */
void loopfs_uncharge_host(struct user_namespace *ns, kuid_t uid,
			  enum loop_dev_charge what);

int loopfs_limits_init(void);
void loopfs_limits_exit(void);

#endif /* LOOPFS_LIMITS_H */
