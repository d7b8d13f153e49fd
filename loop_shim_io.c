// SPDX-License-Identifier: GPL-2.0
/*
 * loop_shim data path: blk-mq requests served through the backing file.
 * Per-request state lives in the blk-mq pdu. Nothing here takes a device's
 * locks: configuration changes freeze the queue, and binding publishes the
 * state last.
 *
 * Inline or worker. ->queue_rq serves a read or write itself, in the
 * submitter's context, only when all of these hold:
 *  - the device's I/O mode allows it (loop_dev_pick_io_mode()): a tmpfs
 *    file, whose data is in memory (LOOP_DEV_IO_INLINE), or a file that
 *    takes IOCB_NOWAIT (LOOP_DEV_IO_NOWAIT); never a block device;
 *  - the submitter is no kernel thread, which submits for others whose
 *    cgroups the worker charges;
 *  - the request is the last of its dispatch batch (the worker takes the
 *    others, so another CPU moves data meanwhile), and no request of its
 *    hardware queue waits for the worker (they would be overtaken);
 *  - for LOOP_DEV_IO_NOWAIT, no other request of the queue is in flight:
 *    at depth the worker, under one plug, hands the backing device whole
 *    batches where inline service would kick it once per request;
 *  - for LOOP_DEV_IO_INLINE, loop_dev_should_copy_inline() says so:
 *    inline, unless the submitter streams and the worker has room, or a
 *    probe is due.
 * Everything else goes to the hardware queue's worker, and so does an
 * inline attempt that IOCB_NOWAIT refuses (-EAGAIN, -EOPNOTSUPP, -EINVAL):
 * never an I/O error. The worker drains its queue's list under one plug;
 * direct-I/O mode submits async kiocbs and ends requests from their
 * completion.
 *
 * The counters of struct loop_dev_queue show where requests go: inflight
 * (started, not ended) and deferred (of those, with the worker) are exact;
 * arrivals (tmpfs requests queued), waits, streaming, probe_in and
 * probe_every judge the submitter. Those five are hints, read and written
 * without locks by the submitter and the worker: a stale one can only
 * send a request the other way, and either way it is ended exactly once
 * (loop_dev_end_request()).
 *
 * A tmpfs request is a memory copy: inline it costs far less than a
 * hand-off, which is all a submitter waiting for each request can gain.
 * One that keeps requests in flight gains a second CPU from the worker
 * instead. Inline, every request ends before ->queue_rq returns, so the
 * two look alike; now and then a request goes to the worker to find out
 * (a probe). If requests arrive while it is there, the submitter streams.
 * The numbers, each with its reason, follow the includes.
 */
#include <linux/blk-cgroup.h>
#include <linux/cred.h>
#include <linux/falloc.h>
#include <linux/kthread.h>
#include <linux/magic.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>

#include "compat.h"
#include "loop_shim_internal.h"

/*
 * A submitter not known to stream sends one request in LOOP_DEV_PROBE_MIN
 * to the worker at first: one that streams at depth is found within its
 * first batches, and one that waits pays a hand-off for no more than one
 * request in sixteen while the spacing grows.
 */
#define LOOP_DEV_PROBE_MIN	16
/*
 * Each probe that finds the submitter waiting doubles the spacing, up to
 * one request in LOOP_DEV_PROBE_MAX: a submitter that always waits then
 * pays a hand-off too rarely to measure, and one that starts streaming is
 * still found within a fraction of a second at the rates of depth 1.
 */
#define LOOP_DEV_PROBE_MAX	4096
/*
 * Hand-offs in a row during which nothing arrived, that end streaming.
 * A streaming submitter waits too whenever its worker catches up with it,
 * often with small requests, so one such hand-off proves nothing; a
 * submitter that really stopped streaming pays for this many.
 */
#define LOOP_DEV_STREAM_WAITS	16
/*
 * From this size on a request is large: a hand-off costs more than the
 * copy of a 4 KiB request but little next to that of 64 KiB, so from here
 * on the copying is worth sharing between two CPUs.
 */
#define LOOP_DEV_LARGE_REQUEST	SZ_64K
/*
 * Requests a streaming submitter's worker holds at most; the submitter
 * serves the rest itself. Large ones are mostly copying: with two, the
 * worker has the next one ready when it ends one while the submitter
 * copies as well. A small one costs the submitter's CPU about as much to
 * submit and reap as to copy, so the worker takes more of them: four
 * (handing it every one was measured slower). Either cap also bounds
 * what a worker that falls behind (other submitters keep every CPU busy)
 * holds up.
 */
#define LOOP_DEV_STREAM_LARGE	2
#define LOOP_DEV_STREAM_SMALL	4

static bool loop_dev_start_write(struct loop_dev_cmd *cmd, bool nowait)
{
	struct inode *inode = file_inode(cmd->iocb.ki_filp);

	if (!S_ISREG(inode->i_mode))
		return true;
	if (nowait) {
		if (!sb_start_write_trylock(inode->i_sb))
			return false;
	} else {
		sb_start_write(inode->i_sb);
	}
	/* An async kiocb ends freeze protection in its completion. */
	if (cmd->iocb.ki_complete)
		__sb_writers_release(inode->i_sb, SB_FREEZE_WRITE);
	return true;
}

static void loop_dev_end_write(struct loop_dev_cmd *cmd)
{
	struct inode *inode = file_inode(cmd->iocb.ki_filp);

	if (!S_ISREG(inode->i_mode))
		return;
	if (cmd->iocb.ki_complete)
		__sb_writers_acquired(inode->i_sb, SB_FREEZE_WRITE);
	sb_end_write(inode->i_sb);
}

/* Final result of a read or write that moved @done bytes in all. */
static int loop_dev_rw_result(struct loop_dev_cmd *cmd, loff_t done)
{
	struct iov_iter rest;

	if (done >= iov_iter_count(&cmd->iter_start))
		return 0;
	if (cmd->write)
		return -EIO;
	/* Reading past the end of the backing file returns zeroes. */
	rest = cmd->iter_start;
	iov_iter_advance(&rest, done);
	iov_iter_zero(iov_iter_count(&rest), &rest);
	return 0;
}

/* Point cmd->iter at cmd->pos, whatever the filesystem did to it. */
static void loop_dev_rewind(struct loop_dev_cmd *cmd)
{
	cmd->iter = cmd->iter_start;
	iov_iter_advance(&cmd->iter, cmd->pos - cmd->start_pos);
}

/* Refusals of IOCB_NOWAIT: no I/O error, the worker tries again. */
static bool loop_dev_nowait_refused(long ret)
{
	return ret == -EAGAIN || ret == -EOPNOTSUPP || ret == -EINVAL;
}

static void loop_dev_defer(struct loop_dev_queue *lq, struct loop_dev_cmd *cmd);

static void loop_dev_aio_complete(struct kiocb *iocb, long ret)
{
	struct loop_dev_cmd *cmd = container_of(iocb, struct loop_dev_cmd,
						iocb);
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	if (cmd->write)
		loop_dev_end_write(cmd);
	if ((iocb->ki_flags & IOCB_NOWAIT) &&
	    (ret == -EAGAIN || ret == -EOPNOTSUPP)) {
		loop_dev_rewind(cmd);
		loop_dev_defer(rq->mq_hctx->driver_data, cmd);
		return;
	}
	if (ret < 0)
		cmd->ret = ret;
	else
		cmd->ret = loop_dev_rw_result(cmd,
					      cmd->pos - cmd->start_pos + ret);
	blk_mq_complete_request(blk_mq_rq_from_pdu(cmd));
}

COMPAT_KI_COMPLETE(loop_dev_aio_complete)

/*
 * Move the rest of cmd's data from cmd->pos. Returns -EIOCBQUEUED when an
 * async kiocb will complete the request, -EAGAIN when @nowait and the I/O
 * would block, else the request's result.
 */
static int loop_dev_rw(struct loop_dev *ldev, struct loop_dev_cmd *cmd,
		       bool nowait)
{
	struct file *file = ldev->file;
	const struct cred *cred;
	ssize_t ret;

	/* Elsewhere a buffered IOCB_NOWAIT write fails: the worker's job. */
	if (nowait && cmd->write && !ldev->use_dio &&
	    !compat_file_buf_wasync(file))
		return -EAGAIN;
	while (iov_iter_count(&cmd->iter)) {
		init_sync_kiocb(&cmd->iocb, file);
		cmd->iocb.ki_pos = cmd->pos;
		cmd->iocb.ki_flags = nowait ? IOCB_NOWAIT : 0;
		if (ldev->use_dio) {
			cmd->iocb.ki_flags |= IOCB_DIRECT;
			cmd->iocb.ki_complete = compat_ki_complete(loop_dev_aio_complete);
		}
		if (cmd->write && !loop_dev_start_write(cmd, nowait))
			return -EAGAIN;
		/*
		 * The opener's rights, not those of the task or worker
		 * serving the request: checks made on the way (suid/sgid
		 * removal, quota and reserved blocks) are its, and a FUSE
		 * daemon mounted in its user namespace answers only ids
		 * that namespace maps (the worker's are EOVERFLOW there).
		 */
		cred = override_creds(file->f_cred);
		if (cmd->write)
			ret = file->f_op->write_iter(&cmd->iocb, &cmd->iter);
		else
			ret = file->f_op->read_iter(&cmd->iocb, &cmd->iter);
		revert_creds(cred);
		if (ret == -EIOCBQUEUED)
			return ret;
		if (cmd->write)
			loop_dev_end_write(cmd);
		if (nowait && loop_dev_nowait_refused(ret)) {
			loop_dev_rewind(cmd);
			return -EAGAIN;
		}
		if (ret < 0)
			return ret;
		if (ret == 0)
			break;
		cmd->pos += ret;
		loop_dev_rewind(cmd);
	}
	return loop_dev_rw_result(cmd, cmd->pos - cmd->start_pos);
}

static int loop_dev_setup_iter(struct loop_dev_cmd *cmd, struct request *rq)
{
	unsigned int dir = cmd->write ? ITER_SOURCE : ITER_DEST;
	struct req_iterator rq_iter;
	struct bio_vec tmp;
	unsigned int nr = 0;

	rq_for_each_bvec(tmp, rq, rq_iter)
		nr++;

	if (rq->bio == rq->biotail) {
		/* A single bio's vector serves as it is. */
		struct bio *bio = rq->bio;

		iov_iter_bvec(&cmd->iter, dir,
			      __bvec_iter_bvec(bio->bi_io_vec, bio->bi_iter),
			      nr, blk_rq_bytes(rq));
		cmd->iter.iov_offset = bio->bi_iter.bi_bvec_done;
	} else {
		struct bio_vec *bvec = cmd->inline_bvec;
		unsigned int i = 0;

		if (nr > LOOP_DEV_INLINE_BVECS) {
			bvec = kmalloc_array(nr, sizeof(*bvec), GFP_NOIO);
			if (!bvec)
				return -ENOMEM;
			cmd->bvec = bvec;
		}
		rq_for_each_bvec(tmp, rq, rq_iter)
			bvec[i++] = tmp;
		iov_iter_bvec(&cmd->iter, dir, bvec, nr, blk_rq_bytes(rq));
	}
	cmd->iter_start = cmd->iter;
	return 0;
}

static int loop_dev_fallocate(struct loop_dev *ldev, struct request *rq,
			      int mode)
{
	loff_t pos = ((loff_t)blk_rq_pos(rq) << SECTOR_SHIFT) + ldev->offset;

	return vfs_fallocate(ldev->file, mode | FALLOC_FL_KEEP_SIZE, pos,
			     blk_rq_bytes(rq));
}

/*
 * Write zeroes by hand where the backing file cannot zero a range. Not
 * vfs_iter_write(): whether it takes freeze protection itself depends on
 * the kernel, so the kiocb is driven directly and protection taken once
 * here.
 */
static int loop_dev_write_zeroes_slow(struct loop_dev *ldev, struct request *rq)
{
	struct inode *inode = file_inode(ldev->file);
	size_t left = blk_rq_bytes(rq);
	struct bio_vec zero[16];
	struct iov_iter iter;
	struct kiocb iocb;
	ssize_t ret = 0;
	int i;

	for (i = 0; i < ARRAY_SIZE(zero); i++)
		bvec_set_page(&zero[i], ZERO_PAGE(0), PAGE_SIZE, 0);
	init_sync_kiocb(&iocb, ldev->file);
	iocb.ki_flags = 0;
	iocb.ki_pos = ((loff_t)blk_rq_pos(rq) << SECTOR_SHIFT) + ldev->offset;
	if (S_ISREG(inode->i_mode))
		sb_start_write(inode->i_sb);
	while (left) {
		size_t len = min_t(size_t, left, ARRAY_SIZE(zero) * PAGE_SIZE);

		iov_iter_bvec(&iter, ITER_SOURCE, zero, ARRAY_SIZE(zero), len);
		ret = ldev->file->f_op->write_iter(&iocb, &iter);
		if (ret <= 0)
			break;
		/* ->write_iter() has advanced ki_pos. */
		left -= ret;
	}
	if (S_ISREG(inode->i_mode))
		sb_end_write(inode->i_sb);
	if (left)
		return ret < 0 ? ret : -EIO;
	return 0;
}

static int loop_dev_do_blocking_op(struct loop_dev *ldev, struct request *rq)
{
	int ret;

	switch (req_op(rq)) {
	case REQ_OP_FLUSH:
		return vfs_fsync(ldev->file, 0);
	case REQ_OP_DISCARD:
		ret = loop_dev_fallocate(ldev, rq, FALLOC_FL_PUNCH_HOLE);
		/* Discard promises nothing about the data: not an error. */
		return ret == -EOPNOTSUPP ? 0 : ret;
	case REQ_OP_WRITE_ZEROES:
		ret = loop_dev_fallocate(ldev, rq,
					 (rq->cmd_flags & REQ_NOUNMAP) ?
					 FALLOC_FL_ZERO_RANGE :
					 FALLOC_FL_PUNCH_HOLE);
		if (ret == -EOPNOTSUPP)
			ret = loop_dev_write_zeroes_slow(ldev, rq);
		return ret;
	default:
		return -EIO;
	}
}

static int loop_dev_do_blocking(struct loop_dev *ldev, struct request *rq)
{
	const struct cred *cred;
	int ret;

	/* As for reads and writes: the opener's rights, not the worker's. */
	cred = override_creds(ldev->file->f_cred);
	ret = loop_dev_do_blocking_op(ldev, rq);
	revert_creds(cred);
	return ret;
}

/* A tmpfs request the worker served ended: judge its submitter. */
static void loop_dev_handoff_ended(struct loop_dev_queue *lq,
				   struct loop_dev_cmd *cmd)
{
	unsigned int waits;

	/* Others came in while it was with the worker: it streams. */
	if (READ_ONCE(lq->arrivals) != cmd->arrivals) {
		WRITE_ONCE(lq->waits, 0);
		WRITE_ONCE(lq->streaming, true);
		WRITE_ONCE(lq->probe_every, LOOP_DEV_PROBE_MIN);
		return;
	}
	/* None did: the submitter waited for this one. */
	waits = READ_ONCE(lq->waits) + 1;
	WRITE_ONCE(lq->waits, waits);
	/* A streaming one whose worker caught up, as far as can be told. */
	if (READ_ONCE(lq->streaming) && waits < LOOP_DEV_STREAM_WAITS)
		return;
	/* A waiting one: serve it inline, probe it half as often. */
	WRITE_ONCE(lq->streaming, false);
	if (lq->probe_every < LOOP_DEV_PROBE_MAX)
		WRITE_ONCE(lq->probe_every, lq->probe_every * 2);
}

static void loop_dev_end_request(struct loop_dev_cmd *cmd, int ret)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct loop_dev_queue *lq = rq->mq_hctx->driver_data;

	kfree(cmd->bvec);
	cmd->bvec = NULL;
	if (cmd->deferred) {
		/* Only tmpfs devices count arrivals and decide by them. */
		if (lq->ldev->io_mode == LOOP_DEV_IO_INLINE)
			loop_dev_handoff_ended(lq, cmd);
		atomic_dec(&lq->deferred);
	}
	atomic_dec(&lq->inflight);
	blk_mq_end_request(rq, errno_to_blk_status(ret));
}

static void loop_dev_complete_rq(struct request *rq)
{
	struct loop_dev_cmd *cmd = blk_mq_rq_to_pdu(rq);

	loop_dev_end_request(cmd, cmd->ret);
}

#ifdef CONFIG_MEMCG
/*
 * The kernel throttles a task that dirties page cache against the dirty
 * limits of the task's own memory cgroup: for the worker, the root's. The
 * buffered writes it makes for a submitter dirty the backing file's cache
 * on the submitter's group, unthrottled: a group near its limit fills with
 * dirty pages that the worker's reclaim, without I/O, cannot free, and its
 * writer is OOM-killed where, writing a file itself, it would have been
 * made to wait. So once the group, or a group above it, is at three
 * quarters of its limit, the worker starts writeback of what it wrote.
 */
static bool loop_dev_memcg_near_limit(struct cgroup_subsys_state *css)
{
	struct mem_cgroup *memcg;

	for (memcg = mem_cgroup_from_css(css); memcg;
	     memcg = parent_mem_cgroup(memcg)) {
		unsigned long max = READ_ONCE(memcg->memory.max);

		if (max != PAGE_COUNTER_MAX &&
		    page_counter_read(&memcg->memory) >= max - max / 4)
			return true;
	}
	return false;
}

static void loop_dev_writeback_for_memcg(struct loop_dev *ldev,
					 struct loop_dev_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	if (!cmd->memcg_css || !loop_dev_memcg_near_limit(cmd->memcg_css))
		return;
	/* Not waited for: only started, as the flusher would. */
	filemap_flush_range(ldev->file->f_mapping, cmd->start_pos,
			    cmd->start_pos + blk_rq_bytes(rq) - 1);
}
#else
static void loop_dev_writeback_for_memcg(struct loop_dev *ldev,
					 struct loop_dev_cmd *cmd)
{
}
#endif

/*
 * The worker ends a request through blk_mq_complete_request(), as the
 * in-tree driver does, and leaves the CPU to the block layer: right here
 * when the worker's CPU shares a cache with the submitting one, else maybe
 * on the submitting CPU (rq_affinity; older kernels never move a
 * request of a hardware queue that serves a single CPU).
 */
static void loop_dev_serve(struct loop_dev *ldev, struct loop_dev_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	int ret;

	if (req_op(rq) == REQ_OP_READ || req_op(rq) == REQ_OP_WRITE)
		ret = loop_dev_rw(ldev, cmd, false);
	else
		ret = loop_dev_do_blocking(ldev, rq);
	/* Before the request ends: until then the file cannot change. */
	if (ret >= 0 && cmd->write && !ldev->use_dio)
		loop_dev_writeback_for_memcg(ldev, cmd);
	if (ret != -EIOCBQUEUED) {
		cmd->ret = ret;
		blk_mq_complete_request(rq);
	}
}

/*
 * Serve @cmd in the worker as its submitter's I/O: page cache and other
 * memory it allocates is charged to the submitter's memory cgroup, and
 * I/O it issues to its block cgroup, as the in-tree driver does.
 */
static void loop_dev_serve_charged(struct loop_dev *ldev,
				   struct loop_dev_cmd *cmd)
{
	/* The request may end, and its pdu be reused, in loop_dev_serve(). */
	struct cgroup_subsys_state *blkcg_css = cmd->blkcg_css;
	struct cgroup_subsys_state *memcg_css = cmd->memcg_css;
	struct mem_cgroup *old_memcg = NULL;

	if (blkcg_css)
		kthread_associate_blkcg(blkcg_css);
#ifdef CONFIG_MEMCG
	if (memcg_css)
		old_memcg = set_active_memcg(mem_cgroup_from_css(memcg_css));
#endif
	loop_dev_serve(ldev, cmd);
	if (blkcg_css)
		kthread_associate_blkcg(NULL);
	if (memcg_css) {
		set_active_memcg(old_memcg);
		css_put(memcg_css);
	}
}

static void loop_dev_workfn(struct work_struct *work)
{
	struct loop_dev_queue *lq = container_of(work, struct loop_dev_queue,
						 work);
	unsigned int noio = memalloc_noio_save();
	struct loop_dev_cmd *cmd;
	struct blk_plug plug;

	blk_start_plug(&plug);
	spin_lock_irq(&lq->lock);
	while ((cmd = list_first_entry_or_null(&lq->list, struct loop_dev_cmd,
					       node))) {
		list_del(&cmd->node);
		spin_unlock_irq(&lq->lock);
		loop_dev_serve_charged(lq->ldev, cmd);
		cond_resched();
		spin_lock_irq(&lq->lock);
	}
	lq->kicked = false;
	spin_unlock_irq(&lq->lock);
	blk_finish_plug(&plug);
	memalloc_noio_restore(noio);
}

/* Lockless peek: a request racing in only costs the inline fast path. */
static bool loop_dev_queue_empty(struct loop_dev_queue *lq)
{
	return list_empty_careful(&lq->list);
}

/*
 * Take the cgroups the worker serves cmd under, in the submitter's context.
 * The first bio's cgroups stand for the request's.
 */
#ifdef CONFIG_MEMCG
/*
 * The memory cgroup of a request's first data page: the page cache page a
 * flusher writes back, the user buffer of a direct I/O that kblockd
 * dispatches after its task was scheduled out with the request plugged.
 * NULL for pages no cgroup owns (slab memory, for instance).
 */
static struct cgroup_subsys_state *loop_dev_data_memcg(struct request *rq)
{
	struct mem_cgroup *memcg;

	if (!rq->bio || !bio_has_data(rq->bio))
		return NULL;
	rcu_read_lock();
	memcg = page_memcg_check(compound_head(bio_page(rq->bio)));
	if (memcg && !css_tryget(&memcg->css))
		memcg = NULL;
	rcu_read_unlock();
	return memcg ? &memcg->css : NULL;
}
#endif

static void loop_dev_get_cgroups(struct loop_dev_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	if (rq->bio)
		cmd->blkcg_css = bio_blkcg_css(rq->bio);
#ifdef CONFIG_MEMCG
	/*
	 * A user task submitting is charged itself: its block cgroup is its
	 * memory cgroup only where the io controller is enabled for it. A
	 * kernel thread (the flusher, kblockd) submits for someone else: the
	 * owner of the data, else of the bio.
	 */
	if (current->mm && !(current->flags & PF_KTHREAD)) {
		struct mem_cgroup *memcg = get_mem_cgroup_from_mm(current->mm);

		if (memcg)
			cmd->memcg_css = &memcg->css;
		return;
	}
	cmd->memcg_css = loop_dev_data_memcg(rq);
	if (!cmd->memcg_css && cmd->blkcg_css)
		cmd->memcg_css = cgroup_get_e_css(cmd->blkcg_css->cgroup,
						  &memory_cgrp_subsys);
#endif
}

/*
 * Hand cmd to its device's worker. Also called from a direct-I/O
 * completion, maybe in interrupt context: a request requeued from there
 * was uncharged (served inline) and stays so.
 */
static void loop_dev_defer(struct loop_dev_queue *lq, struct loop_dev_cmd *cmd)
{
	unsigned long flags;
	bool kick;

	if (!cmd->deferred) {
		cmd->deferred = true;
		cmd->arrivals = READ_ONCE(lq->arrivals);
		atomic_inc(&lq->deferred);
	}
	spin_lock_irqsave(&lq->lock, flags);
	list_add_tail(&cmd->node, &lq->list);
	kick = !lq->kicked;
	lq->kicked = true;
	spin_unlock_irqrestore(&lq->lock, flags);
	if (kick)
		queue_work(lq->ldev->wq, &lq->work);
}

/*
 * Serve a tmpfs request inline. Its data is in page cache, but a swapped
 * out page is read back by bios that, submitted from here, would wait on
 * current->bio_list behind this very request: let them go out directly.
 */
static int loop_dev_rw_inline(struct loop_dev *ldev, struct loop_dev_cmd *cmd)
{
	struct bio_list *bio_list = current->bio_list;
	unsigned int noio = memalloc_noio_save();
	int ret;

	current->bio_list = NULL;
	ret = loop_dev_rw(ldev, cmd, false);
	current->bio_list = bio_list;
	memalloc_noio_restore(noio);
	return ret;
}

/*
 * Is a tmpfs request of a submitter not known to stream due to go to the
 * worker as a probe? Counts down from probe_every.
 */
static bool loop_dev_probe_due(struct loop_dev_queue *lq)
{
	unsigned int probe_in = READ_ONCE(lq->probe_in);

	if (probe_in > 1) {
		WRITE_ONCE(lq->probe_in, probe_in - 1);
		return false;
	}
	WRITE_ONCE(lq->probe_in, READ_ONCE(lq->probe_every));
	return true;
}

/* Serve this tmpfs request inline? See the top of this file. */
static bool loop_dev_should_copy_inline(struct loop_dev_queue *lq,
					struct request *rq)
{
	int deferred = atomic_read(&lq->deferred);

	if (READ_ONCE(lq->streaming)) {
		/* The worker takes its share, the submitter the rest. */
		if (blk_rq_bytes(rq) >= LOOP_DEV_LARGE_REQUEST)
			return deferred >= LOOP_DEV_STREAM_LARGE;
		/*
		 * Small ones only while nothing else wants the submitter's
		 * CPU: with other submitters about, the wakeups and switches
		 * of hand-offs cost more than the copies they move.
		 */
		return deferred >= LOOP_DEV_STREAM_SMALL ||
		       !single_task_running();
	}
	/* A probe is still with the worker: its end will tell. */
	if (deferred)
		return true;
	return !loop_dev_probe_due(lq);
}

/* The conditions of inline service, as listed at the top of this file. */
static bool loop_dev_may_serve_inline(struct loop_dev *ldev,
				      struct loop_dev_queue *lq,
				      struct request *rq, bool last)
{
	if (!last || !loop_dev_queue_empty(lq))
		return false;
	if (ldev->io_mode == LOOP_DEV_IO_INLINE)
		return loop_dev_should_copy_inline(lq, rq);
	return ldev->io_mode == LOOP_DEV_IO_NOWAIT &&
	       atomic_read(&lq->inflight) == 1;
}

static blk_status_t loop_dev_queue_rq(struct blk_mq_hw_ctx *hctx,
				      const struct blk_mq_queue_data *bd)
{
	struct loop_dev_queue *lq = hctx->driver_data;
	struct request *rq = bd->rq;
	struct loop_dev_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct loop_dev *ldev = rq->q->queuedata;
	bool rw = req_op(rq) == REQ_OP_READ || req_op(rq) == REQ_OP_WRITE;
	int ret;

	blk_mq_start_request(rq);
	/* Pairs with loop_dev_configure(): bound, file and mode are set. */
	if (smp_load_acquire(&ldev->state) != LOOP_DEV_BOUND)
		return BLK_STS_IOERR;
	cmd->write = op_is_write(req_op(rq));
	if (cmd->write && (ldev->flags & LO_FLAGS_READ_ONLY))
		return BLK_STS_IOERR;
	cmd->bvec = NULL;
	cmd->deferred = false;
	cmd->blkcg_css = NULL;
	cmd->memcg_css = NULL;
	if (ldev->io_mode == LOOP_DEV_IO_INLINE)
		WRITE_ONCE(lq->arrivals, lq->arrivals + 1);
	if (rw) {
		if (loop_dev_setup_iter(cmd, rq))
			return BLK_STS_RESOURCE;
		cmd->start_pos = ((loff_t)blk_rq_pos(rq) << SECTOR_SHIFT) +
				 ldev->offset;
		cmd->pos = cmd->start_pos;
	}

	atomic_inc(&lq->inflight);
	/*
	 * A kernel thread (the flusher writing back a cgroup's pages) hands
	 * its requests to the worker, which charges the bio's cgroups.
	 */
	if (rw && !(current->flags & PF_KTHREAD) &&
	    loop_dev_may_serve_inline(ldev, lq, rq, bd->last)) {
		if (ldev->io_mode == LOOP_DEV_IO_INLINE)
			ret = loop_dev_rw_inline(ldev, cmd);
		else
			ret = loop_dev_rw(ldev, cmd, true);
		if (ret == -EIOCBQUEUED)
			return BLK_STS_OK;
		if (ret != -EAGAIN) {
			loop_dev_end_request(cmd, ret);
			return BLK_STS_OK;
		}
	}
	loop_dev_get_cgroups(cmd);
	loop_dev_defer(lq, cmd);
	return BLK_STS_OK;
}

static int loop_dev_init_hctx(struct blk_mq_hw_ctx *hctx, void *data,
			      unsigned int index)
{
	struct loop_dev *ldev = data;

	hctx->driver_data = &ldev->queues[index];
	return 0;
}

const struct blk_mq_ops loop_dev_mq_ops = {
	.queue_rq	= loop_dev_queue_rq,
	.complete	= loop_dev_complete_rq,
	.init_hctx	= loop_dev_init_hctx,
};

/* Hardware queue @lq of @ldev, empty, with no submitter judged yet. */
void loop_dev_init_queue(struct loop_dev *ldev, struct loop_dev_queue *lq)
{
	spin_lock_init(&lq->lock);
	INIT_LIST_HEAD(&lq->list);
	INIT_WORK(&lq->work, loop_dev_workfn);
	lq->ldev = ldev;
	lq->probe_every = LOOP_DEV_PROBE_MIN;
	lq->probe_in = LOOP_DEV_PROBE_MIN;
}

/* How reads and writes of @ldev are served, for its file and dio mode. */
enum loop_dev_io_mode loop_dev_pick_io_mode(struct loop_dev *ldev)
{
	struct file *file = ldev->file;

	/*
	 * Loop on loop: served inline, the lower device's locks would nest
	 * inside the upper one's submission (lockdep: recursive locking).
	 * Checked first: a device node usually lives on (dev)tmpfs.
	 */
	if (S_ISBLK(file_inode(file)->i_mode))
		return LOOP_DEV_IO_WORKER;
	if (!ldev->use_dio && file_inode(file)->i_sb->s_magic == TMPFS_MAGIC)
		return LOOP_DEV_IO_INLINE;
	if (file->f_mode & FMODE_NOWAIT)
		return LOOP_DEV_IO_NOWAIT;
	return LOOP_DEV_IO_WORKER;
}
