// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs per-user limits: how many devices each user may create, counted
 * like the kernel's ucounts, at every level of the user namespace tree up
 * to the initial one, and the sysctl /proc/sys/user/max_loop_devices
 * through which each user namespace reads and sets its own limit.
 */
#define pr_fmt(fmt) "loopfs: " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/error-injection.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/magic.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysctl.h>
#include <linux/user_namespace.h>

#include "compat.h"
#include "loopfs_limits.h"
#include "loopfs_abi.h"
#include "loop_shim.h"

/*
 * Devices charged to @uid in @ns: one entry per (namespace, user) level.
 * Entries of the initial namespace also count, in @held, the devices that
 * hold what a host user's containers may have only so much of at a time
 * (enum loop_dev_charge).
 */
struct loopfs_charge {
	struct hlist_node node;
	struct user_namespace *ns;
	kuid_t uid;
	long count;
	long held[LOOP_DEV_NR_CHARGES];
};

/* The limit a user namespace other than the initial one has set. */
struct loopfs_ns_limit {
	struct hlist_node node;
	struct user_namespace *ns;	/* pinned while the limit is set */
	int max;
};

/*
 * Every partition of a scanning device costs the host kernel memory that
 * no cgroup is charged for, and those past a disk's minors take host-wide
 * extended minors: up to 255 of each per device. So a host user's
 * containers may have only so many scanning devices at a time.
 */
static unsigned int container_partscan_devices = 8;
module_param(container_partscan_devices, uint, 0644);
MODULE_PARM_DESC(container_partscan_devices,
		 "Devices scanning partitions that the containers of one host user may have at a time (default: 8)");

/*
 * Each share lets a device's page cache hold 1% of the host's dirty
 * threshold, which a device whose backing file stops answering keeps: so
 * a host user's containers may hold only so many shares at a time,
 * however many devices they bind.
 */
static unsigned int container_dirty_devices = 8;
module_param(container_dirty_devices, uint, 0644);
MODULE_PARM_DESC(container_dirty_devices,
		 "Devices with a share of the host's dirty page threshold that the containers of one host user may have at a time; the others write back at once (default: 8)");

static const unsigned int *loopfs_host_quota[LOOP_DEV_NR_CHARGES] = {
	[LOOP_DEV_CHARGE_PARTSCAN]	= &container_partscan_devices,
	[LOOP_DEV_CHARGE_DIRTY]		= &container_dirty_devices,
};

/* Protects the charge table, the namespace limits and init_limit. */
static DEFINE_SPINLOCK(loopfs_limits_lock);
static DEFINE_HASHTABLE(loopfs_charges, 6);
static DEFINE_HASHTABLE(loopfs_ns_limits, 8);
static int loopfs_init_limit = LOOPFS_DEFAULT_LIMIT;

static struct loopfs_ns_limit *loopfs_find_ns_limit(struct user_namespace *ns)
{
	struct loopfs_ns_limit *l;

	hash_for_each_possible(loopfs_ns_limits, l, node, (unsigned long)ns)
		if (l->ns == ns)
			return l;
	return NULL;
}

static int loopfs_limit(struct user_namespace *ns)
{
	struct loopfs_ns_limit *l;

	if (ns == &init_user_ns)
		return loopfs_init_limit;
	l = loopfs_find_ns_limit(ns);
	return l ? l->max : INT_MAX;
}

static unsigned long loopfs_charge_key(struct user_namespace *ns, kuid_t uid)
{
	return (unsigned long)ns ^ __kuid_val(uid);
}

static struct loopfs_charge *loopfs_find_charge(struct user_namespace *ns,
						kuid_t uid)
{
	struct loopfs_charge *c;

	hash_for_each_possible(loopfs_charges, c, node,
			       loopfs_charge_key(ns, uid))
		if (c->ns == ns && uid_eq(c->uid, uid))
			return c;
	return NULL;
}

static int loopfs_ns_depth(struct user_namespace *ns)
{
	int depth = 0;

	for (; ns; ns = ns->parent)
		depth++;
	return depth;
}

int loopfs_charge(struct user_namespace *ns, kuid_t uid)
{
	int depth = loopfs_ns_depth(ns), used = 0, i, err = 0;
	struct loopfs_charge **spare, *c;
	struct user_namespace *level;
	kuid_t luid;

	spare = kcalloc(depth, sizeof(*spare), GFP_KERNEL);
	if (!spare)
		return -ENOMEM;
	for (i = 0; i < depth; i++) {
		spare[i] = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!spare[i]) {
			err = -ENOMEM;
			goto out_free;
		}
	}

	spin_lock(&loopfs_limits_lock);
	for (level = ns, luid = uid; level; luid = level->owner,
	     level = level->parent) {
		c = loopfs_find_charge(level, luid);
		if (c && c->count >= loopfs_limit(level)) {
			err = -ENOSPC;
			break;
		}
		if (!c && loopfs_limit(level) <= 0) {
			err = -ENOSPC;
			break;
		}
	}
	for (level = ns, luid = uid; !err && level; luid = level->owner,
	     level = level->parent) {
		c = loopfs_find_charge(level, luid);
		if (!c) {
			c = spare[used++];
			c->ns = level;
			c->uid = luid;
			hash_add(loopfs_charges, &c->node,
				 loopfs_charge_key(level, luid));
		}
		c->count++;
	}
	spin_unlock(&loopfs_limits_lock);
out_free:
	for (i = used; i < depth; i++)
		kfree(spare[i]);
	kfree(spare);
	return err;
}

ALLOW_ERROR_INJECTION(loopfs_charge, ERRNO);

void loopfs_uncharge(struct user_namespace *ns, kuid_t uid)
{
	struct loopfs_charge *c;
	struct user_namespace *level;
	kuid_t luid;

	spin_lock(&loopfs_limits_lock);
	for (level = ns, luid = uid; level; luid = level->owner,
	     level = level->parent) {
		c = loopfs_find_charge(level, luid);
		if (WARN_ON_ONCE(!c))
			continue;
		if (--c->count)
			continue;
		WARN_ON_ONCE(memchr_inv(c->held, 0, sizeof(c->held)));
		hash_del(&c->node);
		kfree(c);
	}
	spin_unlock(&loopfs_limits_lock);
}

/*
 * The initial namespace's entry of a device charged to @uid in @ns: the
 * host user all of its namespaces' devices count against.
 */
static struct loopfs_charge *loopfs_host_charge(struct user_namespace *ns,
						kuid_t uid)
{
	lockdep_assert_held(&loopfs_limits_lock);
	for (; ns != &init_user_ns; ns = ns->parent)
		uid = ns->owner;
	return loopfs_find_charge(ns, uid);
}

int loopfs_charge_host(struct user_namespace *ns, kuid_t uid,
		       enum loop_dev_charge what)
{
	struct loopfs_charge *c;
	int err = -ENOSPC;

	spin_lock(&loopfs_limits_lock);
	c = loopfs_host_charge(ns, uid);
	if (!WARN_ON_ONCE(!c) &&
	    c->held[what] < READ_ONCE(*loopfs_host_quota[what])) {
		c->held[what]++;
		err = 0;
	}
	spin_unlock(&loopfs_limits_lock);
	return err;
}

void loopfs_uncharge_host(struct user_namespace *ns, kuid_t uid,
			  enum loop_dev_charge what)
{
	struct loopfs_charge *c;

	spin_lock(&loopfs_limits_lock);
	c = loopfs_host_charge(ns, uid);
	if (!WARN_ON_ONCE(!c || !c->held[what]))
		c->held[what]--;
	spin_unlock(&loopfs_limits_lock);
}

/*
 * A namespace other than the initial one that sets a limit is pinned by its
 * entry, so that the entry cannot outlive it and be found again by a new
 * namespace at the same address. Once that reference is the last one,
 * nothing can reach the namespace again (a new reference needs an existing
 * one: a task's credentials, an nsfs inode, a child namespace, a mount):
 * the entry is dropped at the next access to the knob. So no table cap is
 * needed: apart from those awaiting that access, every entry belongs to a
 * live namespace, which the kernel already charges to its creator
 * (max_user_namespaces), and one user's entries cost nobody else a slot.
 *
 * Moves the dead entries to @dead.
 */
static void loopfs_prune_ns_limits(struct hlist_head *dead)
{
	struct loopfs_ns_limit *l;
	struct hlist_node *tmp;
	int bkt;

	lockdep_assert_held(&loopfs_limits_lock);
	hash_for_each_safe(loopfs_ns_limits, bkt, tmp, l, node) {
		if (ns_ref_read(l->ns) != 1)
			continue;
		hash_del(&l->node);
		hlist_add_head(&l->node, dead);
	}
}

static void loopfs_free_ns_limits(struct hlist_head *dead)
{
	struct loopfs_ns_limit *l;
	struct hlist_node *tmp;

	hlist_for_each_entry_safe(l, tmp, dead, node) {
		put_user_ns(l->ns);
		kfree(l);
	}
}

static int loopfs_set_limit(struct user_namespace *ns, int max)
{
	struct loopfs_ns_limit *l, *fresh = NULL;
	HLIST_HEAD(dead);

	if (ns != &init_user_ns) {
		fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
		if (!fresh)
			return -ENOMEM;
	}
	spin_lock(&loopfs_limits_lock);
	loopfs_prune_ns_limits(&dead);
	l = loopfs_find_ns_limit(ns);
	if (ns == &init_user_ns) {
		loopfs_init_limit = max;
	} else if (l) {
		l->max = max;
		if (max == INT_MAX) {
			hash_del(&l->node);
			hlist_add_head(&l->node, &dead);
		}
	} else if (max != INT_MAX) {
		fresh->ns = get_user_ns(ns);
		fresh->max = max;
		hash_add(loopfs_ns_limits, &fresh->node, (unsigned long)ns);
		fresh = NULL;
	}
	spin_unlock(&loopfs_limits_lock);
	kfree(fresh);
	loopfs_free_ns_limits(&dead);
	return 0;
}

/*
 * Every user namespace reads and sets its own value. The entry is not in
 * the per-namespace sysctl set a module cannot reach, so its mode lets
 * everyone write and the handler decides: it acts for whoever opened the
 * file, in that opener's namespace, and a write needs CAP_SYS_RESOURCE
 * over it in the opener's credentials. A descriptor handed to a more
 * privileged writer (a setuid program's output) gains nothing.
 *
 * The handler is not given the file, and its callers differ (the cgroup
 * sysctl hook calls it with a position of its own), so the file is looked
 * up among the calling task's open files: the one open file of this entry
 * there, or several whose openers share their credentials. Where none is
 * found (a kernel thread, a file closed meanwhile) or openers differ, the
 * opener is unknown and the access is refused.
 */
struct loopfs_knob_search {
	struct file *file;	/* referenced */
	bool ambiguous;
};

static bool loopfs_dentry_is(struct dentry *dentry, const char *name)
{
	return !strcmp(dentry->d_name.name, name);
}

/* Is @file /proc/sys/LOOPFS_SYSCTL_DIR/LOOPFS_SYSCTL_NAME, of any procfs? */
static bool loopfs_file_is_knob(struct file *file)
{
	struct dentry *entry = file->f_path.dentry;
	struct dentry *dir = entry->d_parent;
	struct dentry *sys = dir->d_parent;

	/* procfs never renames these: the names are stable. */
	return entry->d_sb->s_magic == PROC_SUPER_MAGIC &&
	       loopfs_dentry_is(entry, LOOPFS_SYSCTL_NAME) &&
	       loopfs_dentry_is(dir, LOOPFS_SYSCTL_DIR) &&
	       loopfs_dentry_is(sys, "sys") && IS_ROOT(sys->d_parent);
}

static int loopfs_match_knob(const void *arg, struct file *file,
			     unsigned int fd)
{
	struct loopfs_knob_search *search =
		*(struct loopfs_knob_search * const *)arg;

	if (!loopfs_file_is_knob(file))
		return 0;
	if (!search->file) {
		search->file = get_file(file);
		return 0;
	}
	if (search->file->f_cred == file->f_cred)
		return 0;
	search->ambiguous = true;
	return 1;
}

/* The open file of the entry the current task reads or writes, or NULL. */
static struct file *loopfs_knob_file(void)
{
	struct loopfs_knob_search search = { };
	struct loopfs_knob_search *p = &search;

	iterate_fd(current->files, 0, loopfs_match_knob, &p);
	if (search.ambiguous && search.file) {
		fput(search.file);
		return NULL;
	}
	return search.file;
}

static int loopfs_max_devices_handler(const struct ctl_table *table, int write,
				      void *buffer, size_t *lenp, loff_t *ppos)
{
	struct ctl_table tmp = *table;
	struct user_namespace *ns;
	struct file *file;
	HLIST_HEAD(dead);
	int max, err = -EPERM;

	file = loopfs_knob_file();
	if (!file)
		return -EPERM;
	ns = file->f_cred->user_ns;
	if (write && !file_ns_capable(file, ns, CAP_SYS_RESOURCE))
		goto out;
	spin_lock(&loopfs_limits_lock);
	if (!write)
		loopfs_prune_ns_limits(&dead);
	max = loopfs_limit(ns);
	spin_unlock(&loopfs_limits_lock);
	loopfs_free_ns_limits(&dead);
	tmp.data = &max;
	tmp.maxlen = sizeof(max);
	tmp.extra1 = SYSCTL_ZERO;
	tmp.extra2 = SYSCTL_INT_MAX;
	err = proc_dointvec_minmax(&tmp, write, buffer, lenp, ppos);
	if (!err && write)
		err = loopfs_set_limit(ns, max);
out:
	fput(file);
	return err;
}

COMPAT_PROC_HANDLER(loopfs_max_devices_handler)

static struct ctl_table loopfs_sysctls[] = {
	{
		.procname	= LOOPFS_SYSCTL_NAME,
		.mode		= 0666,
		.proc_handler	= compat_proc_handler(loopfs_max_devices_handler),
	},
};

static struct ctl_table_header *loopfs_sysctl_header;

int __init loopfs_limits_init(void)
{
	loopfs_sysctl_header = register_sysctl(LOOPFS_SYSCTL_DIR,
					       loopfs_sysctls);
	return loopfs_sysctl_header ? 0 : -ENOMEM;
}

void loopfs_limits_exit(void)
{
	struct loopfs_ns_limit *l;
	struct hlist_node *tmp;
	int bkt;

	unregister_sysctl_table(loopfs_sysctl_header);
	hash_for_each_safe(loopfs_ns_limits, bkt, tmp, l, node) {
		hash_del(&l->node);
		put_user_ns(l->ns);
		kfree(l);
	}
}

