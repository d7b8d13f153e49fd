// SPDX-License-Identifier: GPL-2.0
//
// cri: the kubelet's side of the CRI, as much of it as the Kubernetes
// suite needs to drive containerd the way the kubelet does, with no
// kubelet: pods (with or without a user namespace of their own) and their
// containers, created, started, exec'd in, stopped and removed.
//
//	cri [-socket PATH] runp -name NAME [-userns HOSTID] [-privileged] [-a KEY=VALUE]...
//	cri create -pod POD -name NAME -image IMAGE [-privileged] [-mount HOST:CTR[:ro]]... -- COMMAND...
//	cri start|stop|rm|pid CONTAINER
//	cri exec [-timeout SECONDS] CONTAINER COMMAND...
//	cri stopp|rmp POD
//	cri pods | ps
//	cri daemonset MANIFEST
//
// runp prints the pod's id and keeps its config under -state (the kubelet
// passes it again with each container it creates); create prints the
// container's id; exec prints the command's output and exits with its
// status; daemonset runs the pod a DaemonSet's manifest asks for on this
// node and prints the pod's and its container's ids; a CRI error goes to
// stderr, exit status 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// What the kubelet masks and makes read-only in a container that is not
// privileged (its default /proc mount type).
var (
	maskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
		"/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
		"/proc/sysrq-trigger"}
)

// The id range a pod with a user namespace of its own gets, as the
// kubelet hands out: 65536 ids from a multiple of 65536.
const usernsLength = 65536

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

type client struct {
	rt    cri.RuntimeServiceClient
	state string
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cri: "+format+"\n", args...)
	os.Exit(1)
}

func (c *client) configPath(pod string) string {
	return filepath.Join(c.state, pod+".json")
}

func (c *client) podConfig(pod string) *cri.PodSandboxConfig {
	data, err := os.ReadFile(c.configPath(pod))
	if err != nil {
		die("pod %s: %v", pod, err)
	}
	cfg := &cri.PodSandboxConfig{}
	if err := json.Unmarshal(data, cfg); err != nil {
		die("pod %s: %v", pod, err)
	}
	return cfg
}

func annotations(list multi) map[string]string {
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			die("annotation %q: say KEY=VALUE", kv)
		}
		m[k] = v
	}
	return m
}

func userns(hostID int64) *cri.UserNamespace {
	if hostID < 0 {
		return &cri.UserNamespace{Mode: cri.NamespaceMode_NODE}
	}
	ids := []*cri.IDMapping{{HostId: uint32(hostID), ContainerId: 0, Length: usernsLength}}
	return &cri.UserNamespace{Mode: cri.NamespaceMode_POD, Uids: ids, Gids: ids}
}

// network is the node's network, but a network namespace of the pod's
// own (loopback alone, from the suite's CNI configuration) with a user
// namespace.
func network(hostID int64) cri.NamespaceMode {
	if hostID < 0 {
		return cri.NamespaceMode_NODE
	}
	return cri.NamespaceMode_POD
}

// keep writes a pod's config under -state, for the containers made in it.
func (c *client) keep(id string, cfg *cri.PodSandboxConfig) {
	data, err := json.Marshal(cfg)
	if err == nil {
		err = os.WriteFile(c.configPath(id), data, 0o600)
	}
	if err != nil {
		die("keeping pod %s's config: %v", id, err)
	}
}

func (c *client) runp(ctx context.Context, args []string) {
	fs := flag.NewFlagSet("runp", flag.ExitOnError)
	name := fs.String("name", "", "the pod's name")
	ns := fs.String("namespace", "default", "the pod's namespace")
	hostID := fs.Int64("userns", -1, "a user namespace of its own, mapping 0 to this host id (65536 ids)")
	privileged := fs.Bool("privileged", false, "a privileged pod")
	var ann multi
	fs.Var(&ann, "a", "a pod annotation KEY=VALUE (repeatable)")
	_ = fs.Parse(args)
	if *name == "" {
		die("runp: -name is required")
	}
	// The node's network, as a hostNetwork pod: no CNI, and no hostname
	// of its own (the kubelet sets none for such a pod). A pod with a
	// user namespace needs a network namespace of its own (the kubelet
	// refuses hostUsers: false with hostNetwork): network() gives it one.
	cfg := &cri.PodSandboxConfig{
		Metadata: &cri.PodSandboxMetadata{Name: *name, Namespace: *ns,
			Uid: fmt.Sprintf("%s-%d", *name, time.Now().UnixNano())},
		Annotations: annotations(ann),
		Linux: &cri.LinuxPodSandboxConfig{
			SecurityContext: &cri.LinuxSandboxSecurityContext{
				Privileged: *privileged,
				NamespaceOptions: &cri.NamespaceOption{
					Network:       network(*hostID),
					Pid:           cri.NamespaceMode_CONTAINER,
					Ipc:           cri.NamespaceMode_POD,
					UsernsOptions: userns(*hostID),
				},
			},
		},
	}
	r, err := c.rt.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		die("RunPodSandbox: %v", err)
	}
	c.keep(r.PodSandboxId, cfg)
	fmt.Println(r.PodSandboxId)
}

func mounts(list multi) []*cri.Mount {
	var ms []*cri.Mount
	for _, m := range list {
		parts := strings.Split(m, ":")
		if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && parts[2] != "ro") {
			die("mount %q: say HOST:CONTAINER[:ro]", m)
		}
		ms = append(ms, &cri.Mount{HostPath: parts[0], ContainerPath: parts[1],
			Readonly: len(parts) == 3})
	}
	return ms
}

func (c *client) create(ctx context.Context, args []string) {
	fs := flag.NewFlagSet("create", flag.ExitOnError)
	pod := fs.String("pod", "", "the pod's id")
	name := fs.String("name", "", "the container's name")
	image := fs.String("image", "", "the container's image")
	privileged := fs.Bool("privileged", false, "a privileged container")
	var mnt multi
	fs.Var(&mnt, "mount", "HOST:CONTAINER[:ro] (repeatable)")
	_ = fs.Parse(args)
	if *pod == "" || *name == "" || *image == "" || fs.NArg() == 0 {
		die("create: -pod, -name, -image and a command are required")
	}
	pcfg := c.podConfig(*pod)
	psc := pcfg.GetLinux().GetSecurityContext()
	sc := &cri.LinuxContainerSecurityContext{
		Privileged: *privileged,
		NamespaceOptions: &cri.NamespaceOption{
			Network:       psc.GetNamespaceOptions().GetNetwork(),
			Pid:           cri.NamespaceMode_CONTAINER,
			Ipc:           cri.NamespaceMode_POD,
			UsernsOptions: psc.GetNamespaceOptions().GetUsernsOptions(),
		},
	}
	if !*privileged {
		sc.MaskedPaths = maskedPaths
		sc.ReadonlyPaths = readonlyPaths
	}
	cfg := &cri.ContainerConfig{
		Metadata: &cri.ContainerMetadata{Name: *name},
		Image:    &cri.ImageSpec{Image: *image},
		Command:  fs.Args(),
		Mounts:   mounts(mnt),
		Linux:    &cri.LinuxContainerConfig{SecurityContext: sc},
	}
	r, err := c.rt.CreateContainer(ctx, &cri.CreateContainerRequest{
		PodSandboxId: *pod, Config: cfg, SandboxConfig: pcfg})
	if err != nil {
		die("CreateContainer: %v", err)
	}
	fmt.Println(r.ContainerId)
}

func (c *client) exec(ctx context.Context, args []string) {
	fs := flag.NewFlagSet("exec", flag.ExitOnError)
	timeout := fs.Int64("timeout", 60, "seconds the command may take")
	_ = fs.Parse(args)
	if fs.NArg() < 2 {
		die("exec: a container and a command are required")
	}
	r, err := c.rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: fs.Arg(0),
		Cmd: fs.Args()[1:], Timeout: *timeout})
	if err != nil {
		die("ExecSync: %v", err)
	}
	os.Stdout.Write(r.Stdout)
	os.Stderr.Write(r.Stderr)
	os.Exit(int(r.ExitCode))
}

// pid prints the process id of the container's first process, from the
// runtime's verbose status.
func (c *client) pid(ctx context.Context, id string) {
	r, err := c.rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		die("ContainerStatus: %v", err)
	}
	info := r.GetInfo()["info"]
	i := strings.Index(info, `"pid":`)
	if i < 0 {
		die("ContainerStatus of %s names no pid", id)
	}
	var pid int
	if _, err := fmt.Sscanf(info[i+len(`"pid":`):], "%d", &pid); err != nil {
		die("ContainerStatus of %s: %v", id, err)
	}
	fmt.Println(pid)
}

func (c *client) list(ctx context.Context, pods bool) {
	if pods {
		r, err := c.rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
		if err != nil {
			die("ListPodSandbox: %v", err)
		}
		for _, p := range r.Items {
			fmt.Println(p.Id, p.Metadata.GetName(), p.State)
		}
		return
	}
	r, err := c.rt.ListContainers(ctx, &cri.ListContainersRequest{})
	if err != nil {
		die("ListContainers: %v", err)
	}
	for _, ctr := range r.Containers {
		fmt.Println(ctr.Id, ctr.Metadata.GetName(), ctr.State)
	}
}

// one runs the commands that take one id and print nothing.
func (c *client) one(ctx context.Context, cmd, id string) error {
	var err error
	switch cmd {
	case "start":
		_, err = c.rt.StartContainer(ctx, &cri.StartContainerRequest{ContainerId: id})
	case "stop":
		_, err = c.rt.StopContainer(ctx, &cri.StopContainerRequest{ContainerId: id, Timeout: 10})
	case "rm":
		_, err = c.rt.RemoveContainer(ctx, &cri.RemoveContainerRequest{ContainerId: id})
	case "stopp":
		_, err = c.rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: id})
	case "rmp":
		_, err = c.rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: id})
		if err == nil {
			err = os.Remove(c.configPath(id))
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		}
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return err
}

func main() {
	socket := flag.String("socket", "/run/containerd/containerd.sock", "the runtime's CRI socket")
	state := flag.String("state", "/run/loopfs-cri", "where pod configs are kept")
	flag.Parse()
	if flag.NArg() == 0 {
		die("no command (runp, create, start, exec, pid, stop, rm, stopp, rmp, pods, ps, daemonset)")
	}
	if err := os.MkdirAll(*state, 0o700); err != nil {
		die("%v", err)
	}
	conn, err := grpc.NewClient("unix://"+*socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		die("%v", err)
	}
	defer conn.Close()
	c := &client{rt: cri.NewRuntimeServiceClient(conn), state: *state}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	cmd, args := flag.Arg(0), flag.Args()[1:]
	switch cmd {
	case "runp":
		c.runp(ctx, args)
	case "create":
		c.create(ctx, args)
	case "exec":
		c.exec(ctx, args)
	case "pid":
		if len(args) != 1 {
			die("pid: one container id")
		}
		c.pid(ctx, args[0])
	case "pods", "ps":
		c.list(ctx, cmd == "pods")
	case "daemonset":
		if len(args) != 1 {
			die("daemonset: one manifest")
		}
		c.daemonSet(ctx, args[0])
	default:
		if len(args) != 1 {
			die("%s: one id", cmd)
		}
		if err := c.one(ctx, cmd, args[0]); err != nil {
			die("%s %s: %v", cmd, args[0], err)
		}
	}
}
