// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs - the uevents of an instance's disks and partitions, announced in
 * the mounter's network namespace.
 *
 * The kernel sends a disk's uevents only to network namespaces owned by
 * the initial user namespace, under the host's names. A container whose
 * network namespace belongs to its own user namespace hears of its
 * devices from loopfs instead: each disk and partition node the instance
 * gains or loses is announced there under the instance's names, DEVPATH
 * under the view of /sys/block (/block/loop<N>[/loop<N>p<M>]). The kernel
 * relays to a namespace's listeners what a holder of CAP_SYS_ADMIN over
 * its owner sends it on a uevent socket of the namespace; uevent_work
 * sends them, in order, with a kernel worker's rights.
 *
 * Locks: instance->uevent_lock, a spinlock, protects the queue and the
 * rate window; nothing else is taken under it.
 */
#define pr_fmt(fmt) "loopfs: " fmt

#include <linux/module.h>
#include <linux/capability.h>
#include <linux/jiffies.h>
#include <linux/net.h>
#include <linux/netlink.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include <net/net_namespace.h>

#include "loopfs.h"

/* The uevents waiting to be sent; each pending work holds an instance. */
static struct workqueue_struct *loopfs_uevent_wq;

struct loopfs_uevent {
	struct list_head node;
	int len;
	char msg[];			/* "action@devpath\0KEY=value\0..." */
};

#define LOOPFS_UEVENT_MAX	256

/* Append "@fmt..." and its NUL to @ev's message. */
static __printf(2, 3) void loopfs_uevent_var(struct loopfs_uevent *ev,
					     const char *fmt, ...)
{
	va_list args;
	int n;

	va_start(args, fmt);
	n = vscnprintf(ev->msg + ev->len, LOOPFS_UEVENT_MAX - ev->len, fmt,
		       args);
	va_end(args);
	ev->len = min(ev->len + n + 1, LOOPFS_UEVENT_MAX);
}

/*
 * A tenant picks when events happen, by adding and removing its devices and
 * partitions as fast as it likes: each instance sends at most
 * container_uevent_rate a second and drops the rest, so the listeners of
 * the namespace, and the memory of the queue, see a bounded rate. Devices
 * need charges, so a tenant's instances that can send at all are bounded
 * too.
 */
static unsigned int container_uevent_rate = 256;
module_param(container_uevent_rate, uint, 0644);
MODULE_PARM_DESC(container_uevent_rate,
		 "Uevents a second each instance announces in its mounter's network namespace; the rest are dropped (default: 256)");

static bool loopfs_uevent_allowed(struct loopfs_instance *inst)
{
	bool allowed;

	spin_lock(&inst->uevent_lock);
	if (time_after(jiffies, inst->uevent_window + HZ)) {
		inst->uevent_window = jiffies;
		inst->uevents_in_window = 0;
	}
	allowed = inst->uevents_in_window < READ_ONCE(container_uevent_rate);
	if (allowed)
		inst->uevents_in_window++;
	spin_unlock(&inst->uevent_lock);
	return allowed;
}

void loopfs_uevent(struct loopfs_instance *inst, const char *action, int index,
		   int partno, dev_t devt)
{
	struct loopfs_uevent *ev;
	char path[LOOPFS_VIEW_PATH_SIZE] = "/";
	const char *name;

	if (!inst->net || !loopfs_uevent_allowed(inst))
		return;
	ev = kmalloc(sizeof(*ev) + LOOPFS_UEVENT_MAX, GFP_KERNEL);
	if (!ev)
		return;
	loopfs_view_path(path + 1, sizeof(path) - 1, index, partno);
	name = strrchr(path, '/') + 1;
	ev->len = 0;
	loopfs_uevent_var(ev, "%s@%s", action, path);
	loopfs_uevent_var(ev, "ACTION=%s", action);
	loopfs_uevent_var(ev, "DEVPATH=%s", path);
	loopfs_uevent_var(ev, "SUBSYSTEM=block");
	loopfs_uevent_var(ev, "MAJOR=%u", MAJOR(devt));
	loopfs_uevent_var(ev, "MINOR=%u", MINOR(devt));
	loopfs_uevent_var(ev, "DEVNAME=%s", name);
	loopfs_uevent_var(ev, "DEVTYPE=%s", partno ? "partition" : "disk");
	if (partno)
		loopfs_uevent_var(ev, "PARTN=%d", partno);
	spin_lock(&inst->uevent_lock);
	list_add_tail(&ev->node, &inst->uevents);
	spin_unlock(&inst->uevent_lock);
	kref_get(&inst->ref);
	if (!queue_work(loopfs_uevent_wq, &inst->uevent_work))
		loopfs_instance_put(inst);
}

/* Hand @ev to the kernel on @sock, a uevent socket of the namespace. */
static void loopfs_uevent_send(struct socket *sock, struct loopfs_uevent *ev)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct nlmsghdr hdr = {
		.nlmsg_len	= NLMSG_LENGTH(ev->len),
		.nlmsg_type	= NLMSG_MIN_TYPE,
		.nlmsg_flags	= NLM_F_REQUEST,
	};
	struct kvec iov[] = {
		{ .iov_base = &hdr, .iov_len = NLMSG_HDRLEN },
		{ .iov_base = ev->msg, .iov_len = ev->len },
	};
	struct msghdr msg = {
		.msg_name	= &kernel,
		.msg_namelen	= sizeof(kernel),
	};

	kernel_sendmsg(sock, &msg, iov, ARRAY_SIZE(iov),
		       NLMSG_HDRLEN + ev->len);
}

static void loopfs_uevent_workfn(struct work_struct *work)
{
	struct loopfs_instance *inst =
		container_of(work, struct loopfs_instance, uevent_work);
	struct loopfs_uevent *ev, *next;
	struct socket *sock = NULL;
	struct file *file = NULL;
	LIST_HEAD(list);

	spin_lock(&inst->uevent_lock);
	list_splice_init(&inst->uevents, &list);
	spin_unlock(&inst->uevent_lock);
	/*
	 * The kernel checks the sender's rights through the socket's file:
	 * this worker's, which hold CAP_SYS_ADMIN over every namespace.
	 */
	if (!list_empty(&list) &&
	    !sock_create_kern(inst->net, AF_NETLINK, SOCK_RAW,
			      NETLINK_KOBJECT_UEVENT, &sock)) {
		file = sock_alloc_file(sock, 0, NULL);
		if (IS_ERR(file))
			file = NULL;
	}
	list_for_each_entry_safe(ev, next, &list, node) {
		if (file)
			loopfs_uevent_send(sock, ev);
		kfree(ev);
	}
	if (file)
		fput(file);
	loopfs_instance_put(inst);
}

/*
 * The network namespace the instance announces its devices in: the
 * mounter's, if the kernel sends it no disk uevents (its owner is not the
 * initial user namespace) and the mounter holds CAP_SYS_ADMIN over its
 * owner, as sending there from user space needs; else none. A user of a
 * container who makes a user namespace of its own, and mounts an instance
 * from it, has no say in what the container's listeners hear.
 */
static struct net *loopfs_uevent_net(void)
{
	struct net *net = current->nsproxy->net_ns;

	if (net->user_ns == &init_user_ns ||
	    !ns_capable(net->user_ns, CAP_SYS_ADMIN))
		return NULL;
	return get_net(net);
}

/* The uevent state of a new instance, made by the mounter. */
void loopfs_uevent_instance_init(struct loopfs_instance *inst)
{
	spin_lock_init(&inst->uevent_lock);
	INIT_LIST_HEAD(&inst->uevents);
	inst->uevent_window = jiffies;
	INIT_WORK(&inst->uevent_work, loopfs_uevent_workfn);
	inst->net = loopfs_uevent_net();
}

int __init loopfs_uevent_init(void)
{
	loopfs_uevent_wq = alloc_workqueue("loopfs_uevents", WQ_UNBOUND, 0);
	return loopfs_uevent_wq ? 0 : -ENOMEM;
}

/* Sends what is queued, dropping the instances the work held. */
void loopfs_uevent_exit(void)
{
	destroy_workqueue(loopfs_uevent_wq);
}
