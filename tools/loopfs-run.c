// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs-run: run COMMAND as root of a new user namespace, in new mount (and
 * optionally PID) namespaces, with a private /dev holding a fresh loopfs
 * instance, and supervise its mount(2) calls through seccomp user
 * notification.  See docs/loopfs-run.md for the policy and its limits.
 *
 * Processes:
 *   supervisor (host root) -- the container's first process C, which drops
 *   to the target uid, creates the user and mount namespaces, builds /dev,
 *   installs the seccomp filter and execs COMMAND (with --pid, C forks the
 *   namespace's init G, which does the last two steps, and waits for it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <linux/loop.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopfs-run.h"

struct config cfg;

static const char *const default_fs[] = {
	"ext4", "ext2", "vfat", "iso9660", "squashfs", "erofs", "udf",
};

/* The new mount API: tools fall back to mount(2) on ENOSYS. */
static const char *const new_mount_api[] = {
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
	"mount_setattr",
};

/* Host device nodes bind-mounted into the container's /dev. */
static const char *const dev_nodes[] = {
	"null", "zero", "full", "random", "urandom", "tty", "fuse",
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: loopfs-run [options] [--] [COMMAND [ARG...]]\n"
"Runs COMMAND (default /bin/sh) as root of a new user namespace with a\n"
"private loopfs instance at /dev/loopfs and supervises its mount(2) calls.\n"
"Run as root.\n"
"  --uid UID          host uid of the container's root (default: $SUDO_UID or 1000)\n"
"  --gid GID          host gid of the container's root (default: $SUDO_GID or UID)\n"
"  --map IN:OUT:N     also map ids IN..IN+N-1 to host OUT.. (uids and gids; repeatable)\n"
"  --devices N        loop devices of the instance, pre-created (default 8)\n"
"  --pid              also a new PID namespace (COMMAND is its init)\n"
"  --allow-fs LIST    comma-separated filesystem types mountable from the\n"
"                     instance's devices (default ext4,ext2,vfat,iso9660,\n"
"                     squashfs,erofs,udf)\n"
"  --fuse TYPE=HELPER mount TYPE through the FUSE program HELPER run inside the\n"
"                     container, e.g. ext4=fuse2fs (repeatable)\n"
"  -v, --verbose      log every decision on stderr\n"
"  -h, --help         print this and exit\n"
"      --version      print the version and exit\n");
}

static unsigned long parse_num(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || !*s || *end || v > 0x7fffffff)
		die("bad %s: %s", what, s);
	return v;
}

static void add_list(char **list, int *n, char *item, const char *what)
{
	if (*n >= MAX_LIST)
		die("too many %s", what);
	list[(*n)++] = item;
}

static void parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "map", required_argument, NULL, 'm' },
		{ "devices", required_argument, NULL, 'd' },
		{ "pid", no_argument, NULL, 'p' },
		{ "allow-fs", required_argument, NULL, 'a' },
		{ "fuse", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		/* for tests, see loopfs-run(1); not in the usage */
		{ "helper-timeout", required_argument, NULL, 't' },
		{}
	};
	const char *s;
	bool have_gid = false, have_allow = false;
	char *tok, *eq;
	unsigned int a, b, n;
	int c, i;

	s = getenv("SUDO_UID");
	cfg.uid = s && strcmp(s, "0") ? parse_num(s, "SUDO_UID") : 1000;
	s = getenv("SUDO_GID");
	if (s && strcmp(s, "0")) {
		cfg.gid = parse_num(s, "SUDO_GID");
		have_gid = true;
	}
	cfg.devices = 8;
	cfg.helper_timeout_ms = 60000;

	while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			cfg.uid = parse_num(optarg, "uid");
			break;
		case 'g':
			cfg.gid = parse_num(optarg, "gid");
			have_gid = true;
			break;
		case 'm':
			if (sscanf(optarg, "%u:%u:%u", &a, &b, &n) != 3 || !n)
				die("bad --map %s (want IN:OUT:COUNT)", optarg);
			add_list(cfg.maps, &cfg.nmaps, optarg, "--map");
			break;
		case 'd':
			cfg.devices = parse_num(optarg, "--devices");
			if (!cfg.devices || cfg.devices > 1000)
				die("--devices must be 1..1000");
			break;
		case 'p':
			cfg.pid_ns = true;
			break;
		case 'a':
			have_allow = true;
			for (tok = strtok(optarg, ","); tok; tok = strtok(NULL, ","))
				add_list(cfg.allow_fs, &cfg.nallow, tok, "--allow-fs types");
			break;
		case 'f':
			eq = strchr(optarg, '=');
			if (!eq || eq == optarg || !eq[1] || cfg.nfuse >= MAX_LIST)
				die("bad --fuse %s (want TYPE=HELPER)", optarg);
			*eq = '\0';
			cfg.fuse[cfg.nfuse].type = optarg;
			cfg.fuse[cfg.nfuse++].helper = eq + 1;
			break;
		case 'v':
			cfg.verbose = true;
			break;
		case 't':
			n = parse_num(optarg, "--helper-timeout");
			if (!n || n > 3600)
				die("--helper-timeout must be 1..3600 seconds");
			cfg.helper_timeout_ms = n * 1000;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("loopfs-run %s\n", LOOPFS_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(125);
		}
	}
	if (!have_gid)
		cfg.gid = cfg.uid;
	/* host root as the container's root would own every host file */
	if (!cfg.uid || !cfg.gid)
		die("refusing to map host uid/gid 0 to the container's root (use --uid/--gid)");
	if (!have_allow) {
		for (i = 0; i < (int)(sizeof(default_fs) / sizeof(*default_fs)); i++)
			cfg.allow_fs[cfg.nallow++] = (char *)default_fs[i];
	}
	if (optind >= argc) {
		static char *sh[] = { "/bin/sh", NULL };

		cfg.argv = sh;
	} else {
		cfg.argv = argv + optind;
	}
}

/* ------------------------------------------------------------------ */
/* Inside the container                                                */
/* ------------------------------------------------------------------ */

static void sync_write(int sock, char ch)
{
	if (write(sock, &ch, 1) != 1)
		die("setup: lost the supervisor: %m");
}

static void sync_read(int sock, char want)
{
	char ch;

	if (read(sock, &ch, 1) != 1 || ch != want)
		die("setup: lost the supervisor");
}

static void bind_host_nodes(const int *fds)
{
	char src[64], dst[64];
	size_t i;
	int fd;

	for (i = 0; i < sizeof(dev_nodes) / sizeof(*dev_nodes); i++) {
		if (fds[i] < 0)
			continue;
		snprintf(dst, sizeof(dst), "/dev/%s", dev_nodes[i]);
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0)
			die("setup: create %s: %m", dst);
		close(fd);
		snprintf(src, sizeof(src), "/proc/self/fd/%d", fds[i]);
		if (mount(src, dst, NULL, MS_BIND, NULL))
			die("setup: bind host /dev/%s: %m", dev_nodes[i]);
		close(fds[i]);
	}
}

/*
 * The instance's views over /sys/block and /sys/dev/block, so that
 * losetup -a/-j/-D, lsblk and mount's reuse of a bound image find the
 * container's devices and partitions by the names its /dev gives them,
 * and nothing else.
 */
static void bind_sysblock_view(void)
{
	if (mount("/dev/loopfs/" LOOPFS_VIEW_NAME, "/sys/block", NULL,
		  MS_BIND, NULL))
		die("setup: bind /dev/loopfs/" LOOPFS_VIEW_NAME
		    " over /sys/block: %m");
	if (mount("/dev/loopfs/" LOOPFS_DEV_VIEW_NAME, "/sys/dev/block", NULL,
		  MS_BIND, NULL))
		die("setup: bind /dev/loopfs/" LOOPFS_DEV_VIEW_NAME
		    " over /sys/dev/block: %m");
}

/*
 * A private /dev: tmpfs, host nodes, a fresh loopfs instance, symlinks;
 * and the instance's /sys/block.
 */
static int setup_dev(void)
{
	static const char *const links[][2] = {
		{ "/proc/self/fd", "/dev/fd" },
		{ "/proc/self/fd/0", "/dev/stdin" },
		{ "/proc/self/fd/1", "/dev/stdout" },
		{ "/proc/self/fd/2", "/dev/stderr" },
		{ "pts/ptmx", "/dev/ptmx" },
		{ "loopfs/" LOOPFS_CONTROL_NAME, "/dev/" LOOPFS_CONTROL_NAME },
	};
	int fds[sizeof(dev_nodes) / sizeof(*dev_nodes)];
	char opts[32], path[64], target[64];
	struct statfs sfs;
	size_t i;
	int ctl, inst;
	unsigned int n;

	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		die("setup: make / a slave: %m");
	for (i = 0; i < sizeof(dev_nodes) / sizeof(*dev_nodes); i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		fds[i] = open(path, O_PATH | O_CLOEXEC);
	}
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755"))
		die("setup: tmpfs on /dev: %m");
	bind_host_nodes(fds);
	for (i = 0; i < sizeof(links) / sizeof(*links); i++) {
		if (symlink(links[i][0], links[i][1]))
			die("setup: symlink %s: %m", links[i][1]);
	}
	if (mkdir("/dev/shm", 01777) || mkdir("/dev/pts", 0755) ||
	    mkdir("/dev/loopfs", 0755))
		die("setup: mkdir in /dev: %m");
	if (mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
		die("setup: tmpfs on /dev/shm: %m");
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620"))
		vlog("setup: no devpts instance: %m");

	snprintf(opts, sizeof(opts), "max=%u", cfg.devices);
	if (mount("loop", "/dev/loopfs", LOOPFS_FSTYPE, 0, opts))
		die("setup: mount -t loop -o %s inside the user namespace: %m "
		    "(is loopfs.ko loaded?)", opts);
	inst = open("/dev/loopfs", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (inst < 0 || fstatfs(inst, &sfs) || sfs.f_type != LOOPFS_SUPER_MAGIC)
		die("setup: /dev/loopfs is not a loopfs instance");
	ctl = open("/dev/loopfs/" LOOPFS_CONTROL_NAME, O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		die("setup: open /dev/loopfs/loop-control: %m");
	for (n = 0; n < cfg.devices; n++) {
		if (ioctl(ctl, LOOP_CTL_ADD, n) != (int)n)
			die("setup: LOOP_CTL_ADD %u: %m", n);
		snprintf(path, sizeof(path), "loopfs/" LOOPFS_NODE_FMT, (int)n);
		snprintf(target, sizeof(target), "/dev/" LOOPFS_NODE_FMT, (int)n);
		if (symlink(path, target))
			die("setup: symlink %s: %m", target);
	}
	close(ctl);
	bind_sysblock_view();
	return inst;
}

static scmp_filter_ctx build_filter(void)
{
	scmp_filter_ctx ctx;
	size_t i;
	int nr, r;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		die("seccomp_init failed");
#ifdef __x86_64__
	/* the same rules for 32-bit and x32 programs */
	seccomp_arch_add(ctx, SCMP_ARCH_X86);
	seccomp_arch_add(ctx, SCMP_ARCH_X32);
#endif
	/* root of the user namespace may install a filter without NNP */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(mount), 0);
	for (i = 0; !r && i < sizeof(new_mount_api) / sizeof(*new_mount_api); i++) {
		nr = seccomp_syscall_resolve_name(new_mount_api[i]);
		if (nr == __NR_SCMP_ERROR)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	}
	if (r)
		die("seccomp rules: %s", strerror(-r));
	return ctx;
}

/* Installs the filter, hands the listener over, execs COMMAND. */
static void exec_command(int sock, int inst)
{
	scmp_filter_ctx ctx = build_filter();
	int fds[2], r;
	char ok = 'F';

	r = seccomp_load(ctx);
	if (r)
		die("seccomp_load: %s", strerror(-r));
	fds[0] = seccomp_notify_fd(ctx);
	fds[1] = inst;
	if (fds[0] < 0)
		die("no seccomp listener fd");
	/* from here on, mount(2) needs the supervisor */
	if (send_fds(sock, &ok, 1, fds, 2))
		die("setup: cannot pass the listener: %m");
	close(fds[0]);
	close(inst);
	sync_read(sock, 'G');
	close(sock);
	seccomp_release(ctx);
	execvp(cfg.argv[0], cfg.argv);
	die("exec %s: %m", cfg.argv[0]);
}

static pid_t init_pid;
static int init_pidfd = -1;

/* through a pidfd: once the child is reaped, its pid may be another's */
static void forward_signal(int sig)
{
	if (init_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, init_pidfd, sig, NULL, 0);
}

static int container_main(int sock)
{
	int inst, r;

	/* the user namespace belongs to the target uid, not to host root */
	if (setgroups(0, NULL) || setresgid(cfg.gid, cfg.gid, cfg.gid) ||
	    setresuid(cfg.uid, cfg.uid, cfg.uid))
		die("setup: switch to uid %u: %m", cfg.uid);
	prctl(PR_SET_DUMPABLE, 1);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | (cfg.pid_ns ? CLONE_NEWPID : 0)))
		die("setup: unshare user/mount namespaces as uid %u: %m", cfg.uid);
	sync_write(sock, 'U');
	sync_read(sock, 'M');
	if (setresgid(0, 0, 0) || setresuid(0, 0, 0) || setgroups(0, NULL))
		die("setup: become root of the user namespace: %m");
	inst = setup_dev();

	if (!cfg.pid_ns)
		exec_command(sock, inst);

	init_pid = fork();
	if (init_pid < 0)
		die("fork: %m");
	if (init_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
			logmsg("setup: no proc for the PID namespace: %m");
		exec_command(sock, inst);
	}
	close(inst);
	close(sock);
	init_pidfd = syscall(SYS_pidfd_open, init_pid, 0);
	signal(SIGINT, forward_signal);
	signal(SIGTERM, forward_signal);
	signal(SIGHUP, forward_signal);
	r = wait_child(init_pid, -1);
	return r < 0 ? 125 : r;
}

/* ------------------------------------------------------------------ */
/* Supervisor                                                          */
/* ------------------------------------------------------------------ */

/*
 * Writes the container's map of uids or gids (file: "uid_map", "gid_map"):
 * root for its root, the --map ranges; or, with to_self, each of those host
 * ids to itself.
 */
static void write_map(pid_t pid, const char *file, unsigned int root,
		      bool to_self)
{
	char path[64], buf[64 * (MAX_LIST + 1)];
	unsigned int in, out, n;
	size_t len;
	int fd, i;

	len = snprintf(buf, sizeof(buf), "%u %u 1\n", to_self ? root : 0, root);
	for (i = 0; i < cfg.nmaps; i++) {
		sscanf(cfg.maps[i], "%u:%u:%u", &in, &out, &n);
		len += snprintf(buf + len, sizeof(buf) - len, "%u %u %u\n",
				to_self ? out : in, out, n);
	}
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		die("write %s: %m", path);
	close(fd);
}

/*
 * A user namespace mapping each host id the container maps to itself. An
 * image whose root directory a mapped host uid owns was prepared by the host,
 * in host ids, and is ID-mapped through this one (idmap_mount()): its ids
 * the container maps show as before, any other (host root's, another
 * tenant's) as no id at all, to the container and to host root looking in.
 * The image's owner picks the mapping, and the container writes the image:
 * neither choice shows ids the container does not map.
 */
static int host_ids_userns(void)
{
	char path[64], ch;
	int sv[2], fd;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		die("socketpair: %m");
	pid = fork();
	if (pid < 0)
		die("fork: %m");
	if (pid == 0) {
		close(sv[0]);
		if (unshare(CLONE_NEWUSER) || write(sv[1], "U", 1) != 1)
			_exit(1);
		/* until the parent has opened the namespace */
		while (read(sv[1], &ch, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(sv[1]);
	if (read(sv[0], &ch, 1) != 1)
		die("cannot make the host ids' user namespace");
	write_map(pid, "uid_map", cfg.uid, true);
	write_map(pid, "gid_map", cfg.gid, true);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %m", path);
	close(sv[0]);
	wait_child(pid, -1);
	return fd;
}

/* Is the user namespace fd ours, or nested below ours?  Consumes fd. */
static bool in_container_userns(struct container *c, int fd)
{
	struct stat st;
	int depth, parent;

	for (depth = 0; fd >= 0 && depth < 40; depth++) {
		if (fstat(fd, &st) == 0 && st.st_dev == c->userns_dev &&
		    st.st_ino == c->userns_ino) {
			close(fd);
			return true;
		}
		parent = ioctl(fd, NS_GET_PARENT);
		close(fd);
		fd = parent;
	}
	if (fd >= 0)
		close(fd);
	return false;
}

/* Has pid exited, its parent yet to reap it? */
static bool zombie(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* "pid (comm) S ...", comm may hold anything */
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/*
 * SIGKILLs every process left in the container; returns how many, zombies
 * left out (their user namespace can still be looked up).  Each is
 * signalled through a pidfd opened before its user namespace is looked at
 * and still alive after: the pid named that process all along, so a pid
 * reused meanwhile is never signalled.
 */
static int kill_leftovers(struct container *c)
{
	struct dirent *de;
	char path[64];
	int killed = 0, fd, pidfd;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		pid_t pid = atoi(de->d_name);

		if (pid <= 1 || pid == getpid())
			continue;
		pidfd = syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && in_container_userns(c, fd) &&
		    !syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) &&
		    !syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) &&
		    !zombie(pid))
			killed++;
		close(pidfd);
	}
	closedir(d);
	return killed;
}

static int record_devices(struct container *c, dev_t *devs, int max)
{
	struct dirent *de;
	struct stat st;
	int n = 0, fd;
	DIR *d;

	fd = openat(c->inst_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		if (!fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISBLK(st.st_mode))
			devs[n++] = st.st_rdev;
	}
	closedir(d);
	return n;
}

static int ms_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 +
	       (now.tv_nsec - start->tv_nsec) / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * COMMAND is gone: kill what is left of the container, drop every reference
 * the supervisor holds, and wait (bounded) until the devices are gone.
 */
static void teardown(struct container *c)
{
	struct timespec start;
	dev_t devs[1024];
	char path[64];
	int i, n, tries;

	clock_gettime(CLOCK_MONOTONIC, &start);
	n = record_devices(c, devs, 1024);
	/*
	 * A helper stuck in the container's FUSE filesystem dies once the
	 * daemon is killed here; it is reaped if it does within a moment.
	 */
	for (tries = 0; tries < 500 && kill_leftovers(c); tries++) {
		reap_helpers(0);
		sleep_ms(10);
	}
	vlog("no process of the container left after %d ms", ms_since(&start));
	reap_helpers(2000);
	if (c->notify_fd >= 0)
		close(c->notify_fd);
	close(c->inst_fd);
	close(c->userns_fd);
	close(c->host_ids_fd);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u",
			 major(devs[i]), minor(devs[i]));
		for (tries = 0; tries < 1000 && !access(path, F_OK); tries++)
			sleep_ms(10);
		if (!access(path, F_OK))
			logmsg("device %s still exists after teardown", path);
	}
	vlog("its devices gone after %d ms", ms_since(&start));
	if (c->janitor >= 0)
		stop_janitor(c->janitor, c->janitor_pid);
}

static int child_pidfd = -1;

static void supervisor_signal(int sig)
{
	if (child_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, child_pidfd, sig, NULL, 0);
}

static int supervise(struct container *c)
{
	struct pollfd p[2];
	int status = 0;

	p[0].fd = c->notify_fd;
	p[0].events = POLLIN;
	p[1].fd = c->pidfd;
	p[1].events = POLLIN;
	/* every wait on a helper watches the pidfd too: see c->exited */
	while (!c->exited) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %m");
		}
		if (p[0].revents & POLLIN)
			handle_notification(c);
		else if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			p[0].fd = -1;	/* no filtered task left */
		if (p[1].revents & POLLIN)
			break;
	}
	status = wait_child(c->pid, -1);
	teardown(c);
	return status < 0 ? 125 : status;
}

int main(int argc, char **argv)
{
	struct container c = { .notify_fd = -1, .inst_fd = -1, .pidfd = -1,
			       .userns_fd = -1, .host_ids_fd = -1,
			       .janitor = -1 };
	struct stat st;
	char path[64], ch;
	int sv[2], fds[2];

	parse_options(argc, argv);
	/* checked first: the first step to fail would name another uid */
	if (geteuid())
		die("must run as root (it mounts for the container)");
	c.supervisor = getpid();
	if (supervise_init())
		die("cannot set up the supervisor");
	c.proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c.proc_fd < 0)
		die("open /proc: %m");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		die("socketpair: %m");

	c.pid = fork();
	if (c.pid < 0)
		die("fork: %m");
	if (c.pid == 0) {
		close(sv[0]);
		close(c.proc_fd);
		exit(container_main(sv[1]));
	}
	c.pidfd = syscall(SYS_pidfd_open, c.pid, 0);
	if (c.pidfd < 0)
		die("pidfd_open: %m");
	child_pidfd = c.pidfd;
	close(sv[1]);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, supervisor_signal);
	signal(SIGTERM, supervisor_signal);
	signal(SIGHUP, supervisor_signal);

	if (read(sv[0], &ch, 1) != 1 || ch != 'U')
		exit(wait_child(c.pid, -1) ?: 125);
	write_map(c.pid, "uid_map", cfg.uid, false);
	write_map(c.pid, "gid_map", cfg.gid, false);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", c.pid);
	/* kept: the ID mapping of the mounts made for the container */
	c.userns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c.userns_fd < 0 || fstat(c.userns_fd, &st))
		die("open %s: %m", path);
	c.userns_dev = st.st_dev;
	c.userns_ino = st.st_ino;
	c.host_ids_fd = host_ids_userns();
	if (write(sv[0], "M", 1) != 1)
		die("setup: lost the container");

	if (recv_fds(sv[0], &ch, 1, fds, 2) != 2 || ch != 'F') {
		/* the container reported why on stderr */
		exit(wait_child(c.pid, -1) ?: 125);
	}
	c.notify_fd = fds[0];
	c.inst_fd = fds[1];
	if (write(sv[0], "G", 1) != 1)
		die("setup: lost the container");
	close(sv[0]);
	vlog("container %d running %s", c.pid, cfg.argv[0]);
	return supervise(&c);
}
