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

#endif /* LOOPFS_LIMITS_H */
