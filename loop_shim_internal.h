/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loop_shim internals: a device, its hardware queues and its requests, as
 * the two halves of the block driver share them. loop_shim.c makes and
 * configures devices (loop(4) ioctls, sysfs, lifetime); loop_shim_io.c
 * serves their requests.
 */
#ifndef LOOP_SHIM_INTERNAL_H
#define LOOP_SHIM_INTERNAL_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>
#include <linux/uio.h>
#include <linux/workqueue.h>

#include "loop_shim.h"

/* Bio segments a request made of several bios finds room for in its pdu. */
#define LOOP_DEV_INLINE_BVECS	4
#define LOOP_DEV_MAX_HW_QUEUES	8

enum loop_dev_state {
	LOOP_DEV_UNBOUND,
	LOOP_DEV_BOUND,
	LOOP_DEV_RUNDOWN,	/* being cleared */
	LOOP_DEV_DELETING,	/* claimed for destruction */
};

enum loop_dev_io_mode {
	LOOP_DEV_IO_WORKER,	/* always hand requests to the worker */
	LOOP_DEV_IO_NOWAIT,	/* try inline with IOCB_NOWAIT first */
	LOOP_DEV_IO_INLINE,	/* tmpfs: page cache only, serve inline */
};

/*
 * Requests of one hardware queue that its worker serves in order. One
 * worker draining a list (as the in-tree driver does) costs one wakeup per
 * batch instead of one per request, and leaves the submitting CPU free.
 */
struct loop_dev_queue {
	spinlock_t lock;	/* protects list and kicked */
	struct list_head list;
	/*
	 * The work is queued and will drain list: a submitter queues it only
	 * when this is clear, so one that keeps requests coming pays for
	 * queue_work() (the pool's lock, often a wakeup) once per batch.
	 */
	bool kicked;
	struct work_struct work;
	struct loop_dev *ldev;
	atomic_t inflight;	/* requests started and not yet ended */
	atomic_t deferred;	/* of those, handed to the worker */
	/*
	 * Whether the submitter keeps requests coming while one is with the
	 * worker, which tmpfs requests are served by (hints: read and written
	 * without locks). arrivals: tmpfs requests queued so far; waits:
	 * hand-offs in a row during which none arrived; streaming: some
	 * arrived while a request was with the worker, and waits is below
	 * LOOP_DEV_STREAM_WAITS; probe_in, probe_every: countdown to, and
	 * spacing of, the next request handed off only to find out.
	 */
	unsigned int arrivals;
	unsigned int waits;
	bool streaming;
	unsigned int probe_in;
	unsigned int probe_every;
};

struct loop_dev {
	struct gendisk *disk;
	struct blk_mq_tag_set tag_set;
	int minor_id;
	int number;
	unsigned long serial;
	struct user_namespace *user_ns;
	struct cgroup *tenant;
	kuid_t uid;
	kgid_t gid;
	const struct loop_dev_ops *ops;
	void *owner;

	/*
	 * Protects state, orphan, flags, offset, sizelimit, file_name and
	 * every change of file, use_dio and io_mode. Entering LOOP_DEV_BOUND
	 * (LOOP_CONFIGURE, LOOP_SET_FD), replacing the file of a bound device
	 * (LOOP_CHANGE_FD) and leaving LOOP_DEV_BOUND through LOOP_CLR_FD
	 * also hold loop_dev_chain_lock; a device no longer bound drops its
	 * file without it (loop_dev_unbind()). The last close
	 * (loop_dev_release(), loop_dev_orphan()) leaves LOOP_DEV_BOUND
	 * without it: no file is open on the device then, so no chain of
	 * backing files leads to it.
	 */
	struct mutex lock;
	enum loop_dev_state state;
	bool orphan;
	bool dirty_share;	/* charged while bound: loop_dev_take_dirty_share() */
	int flags;
	loff_t offset;
	loff_t sizelimit;
	char file_name[LO_NAME_SIZE];
	gfp_t old_gfp_mask;

	/*
	 * Read by the I/O path without locks once state is LOOP_DEV_BOUND;
	 * written with the queue frozen, or before the bound state is
	 * published.
	 */
	struct file *file;
	bool use_dio;
	enum loop_dev_io_mode io_mode;

	/* Lets sysfs readers take a reference on file without ->lock. */
	spinlock_t file_lock;
	bool sysfs_added;	/* the loop/ group exists */

	struct work_struct destroy_work;
	/*
	 * The queues' workers run here, not on a workqueue shared by every
	 * device: requests stalled on one device's backing must not use up
	 * the concurrency other devices (other tenants) need.
	 */
	struct workqueue_struct *wq;
	struct rcu_head free_rcu;
	struct loop_dev_queue queues[LOOP_DEV_MAX_HW_QUEUES];
};

struct loop_dev_cmd {
	struct kiocb iocb;
	struct iov_iter iter;
	struct iov_iter iter_start;
	loff_t pos;
	loff_t start_pos;
	bool write;
	int ret;
	struct bio_vec *bvec;
	struct list_head node;
	bool deferred;		/* counted in loop_dev_queue.deferred */
	unsigned int arrivals;	/* loop_dev_queue.arrivals when deferred */
	/* The submitter's cgroups, which the worker charges for the I/O. */
	struct cgroup_subsys_state *blkcg_css;
	struct cgroup_subsys_state *memcg_css;	/* referenced */
	struct bio_vec inline_bvec[LOOP_DEV_INLINE_BVECS];
};

/* loop_shim_io.c */
extern const struct blk_mq_ops loop_dev_mq_ops;
void loop_dev_init_queue(struct loop_dev *ldev, struct loop_dev_queue *lq);
enum loop_dev_io_mode loop_dev_pick_io_mode(struct loop_dev *ldev);

#endif /* LOOP_SHIM_INTERNAL_H */
