// SPDX-License-Identifier: GPL-2.0
//
// loopfs-nri: an NRI plugin that gives each container of a pod that asks
// for it a loopfs instance of its own.
//
// The kubelet's runtime (containerd 2.x, CRI-O) calls the plugin when it
// creates a container. For a container its pod asks an instance for, the
// plugin adds to the container's OCI spec what the OCI hook needs
// (loopfs-oci-hook, as Podman runs it): the hook itself at the
// createContainer stage, which mounts the instance on the container's
// /dev/loopfs from inside the container's namespaces and links
// /dev/loop-control and /dev/loopN to it, the annotations the hook reads
// (io.loopfs.instance, io.loopfs.max, io.loopfs.partitions), and the
// device-cgroup rules that let the container open the instance's nodes.
// The hook does the work; the plugin translates the pod's request.
//
// Pod annotations:
//
//	loopfs.io/instance: "true"                  every container of the pod
//	loopfs.io/instance.container.NAME: "true"   container NAME (overrides)
//	loopfs.io/max: "8"                          devices per instance, 1..1024
//	loopfs.io/partitions: "15"                  partition links per device, 0..15
//
// A value the plugin cannot read fails the container's creation with the
// reason, which the runtime returns to the kubelet (kubectl describe shows
// it): a container never starts without the instance its pod asked for.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

const (
	annInstance    = "loopfs.io/instance"
	annOneInstance = "loopfs.io/instance.container."
	annMax         = "loopfs.io/max"
	annPartitions  = "loopfs.io/partitions"

	// What the OCI hook reads from the container's spec.
	hookInstance   = "io.loopfs.instance"
	hookMax        = "io.loopfs.max"
	hookPartitions = "io.loopfs.partitions"

	defaultMax        = 8
	maxDevices        = 1024
	defaultPartitions = 15
	maxPartitions     = 15
)

type plugin struct {
	hook string    // the OCI hook's path on the node
	once sync.Once // the first try to load the module
}

// parseSwitch reads an instance annotation as the OCI hook does.
func parseSwitch(key, value string) (bool, error) {
	switch strings.ToLower(value) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("pod annotation %s=%q: say true or false", key, value)
}

// parseCount reads a numeric annotation: def when absent, else lo..hi.
func parseCount(ann map[string]string, key string, def, lo, hi int) (int, error) {
	value, ok := ann[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < lo || n > hi || strings.TrimSpace(value) != value {
		return 0, fmt.Errorf("pod annotation %s=%q is not a number from %d to %d", key, value, lo, hi)
	}
	return n, nil
}

// wanted tells whether the pod asks an instance for container name: the
// container's own annotation if there is one, else the pod's.
func wanted(ann map[string]string, name string) (bool, error) {
	key := annOneInstance + name
	if value, ok := ann[key]; ok {
		return parseSwitch(key, value)
	}
	if value, ok := ann[annInstance]; ok {
		return parseSwitch(annInstance, value)
	}
	return false, nil
}

// Configure takes the plugin's configuration from the runtime: for a
// plugin the runtime starts from its plugin directory, the file of the
// same name in its plugin configuration directory, JSON such as
// {"hook": "/usr/libexec/loopfs/loopfs-oci-hook"}.
func (p *plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	if strings.TrimSpace(config) == "" {
		return 0, nil
	}
	var cfg struct {
		Hook string `json:"hook"`
	}
	dec := json.NewDecoder(strings.NewReader(config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return 0, loopfsError(fmt.Errorf("configuration: %w", err))
	}
	if cfg.Hook != "" {
		p.hook = cfg.Hook
	}
	return 0, nil
}

// CreateContainer adds the hook, its annotations and the device rules to
// a container its pod asks an instance for.
func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	ann := pod.GetAnnotations()
	want, err := wanted(ann, ctr.GetName())
	if err != nil || !want {
		return nil, nil, loopfsError(err)
	}
	max, err := parseCount(ann, annMax, defaultMax, 1, maxDevices)
	if err != nil {
		return nil, nil, loopfsError(err)
	}
	parts, err := parseCount(ann, annPartitions, defaultPartitions, 0, maxPartitions)
	if err != nil {
		return nil, nil, loopfsError(err)
	}
	block, control, err := p.majors()
	if err != nil {
		return nil, nil, loopfsError(err)
	}

	adjust := &api.ContainerAdjustment{}
	adjust.AddAnnotation(hookInstance, "true")
	adjust.AddAnnotation(hookMax, strconv.Itoa(max))
	adjust.AddAnnotation(hookPartitions, strconv.Itoa(parts))
	adjust.AddHooks(&api.Hooks{
		CreateContainer: []*api.Hook{{Path: p.hook}},
	})
	addDeviceRules(adjust, block, control)
	return adjust, nil, nil
}

// loopfsDevices reads, from /proc/devices, the block major loopfs's
// devices get and the character major of every instance's loop-control
// node (all of them are minor 0): the module takes both when it loads.
func loopfsDevices() (block, control int64, err error) {
	data, err := os.ReadFile("/proc/devices")
	if err != nil {
		return 0, 0, err
	}
	inBlock := false
	for _, line := range strings.Split(string(data), "\n") {
		if line == "Block devices:" {
			inBlock = true
			continue
		}
		var major int64
		var name string
		if _, err := fmt.Sscanf(line, "%d %s", &major, &name); err != nil {
			continue
		}
		switch {
		case inBlock && name == "loopfs":
			block = major
		case !inBlock && name == "loopfs-control":
			control = major
		}
	}
	if block == 0 || control == 0 {
		return 0, 0, errors.New("loopfs.ko is not loaded on this node")
	}
	return block, control, nil
}

// majors are loopfs's block and control majors, found once: on the first
// container that asks, loading the module if need be (a plugin the
// runtime starts runs as the node's root).
func (p *plugin) majors() (block, control int64, err error) {
	p.once.Do(func() {
		if _, _, err := loopfsDevices(); err != nil {
			// What mount -t loop would load; a DaemonSet's
			// container cannot, and relies on the node loading
			// it at boot.
			_ = exec.Command("modprobe", "loopfs").Run()
		}
	})
	return loopfsDevices()
}

// addDeviceRules lets the container open its instance's nodes: its
// loop-control (minor 0 of the control major, the same for every
// instance) and every minor of the block major, whose minors the module
// hands out as devices are made. The driver's open lets in only the
// cgroup the instance was made for, so a node a container makes for a
// neighbour's device number opens nothing.
//
// NRI 0.8 (containerd 2.1) has no device-cgroup rule of its own in an
// adjustment, only devices, each with its rule: loop-control is a device
// at its /dev path (the hook replaces the node with a link into the
// instance), and the block rule is a device with no path and any minor,
// which the runtime writes into the cgroup rules and creates no node for.
func addDeviceRules(adjust *api.ContainerAdjustment, block, control int64) {
	adjust.AddDevice(&api.LinuxDevice{
		Path:     "/dev/loop-control",
		Type:     "c",
		Major:    control,
		Minor:    0,
		FileMode: api.FileMode(os.FileMode(0o600)),
		Uid:      api.UInt32(uint32(0)),
		Gid:      api.UInt32(uint32(0)),
	})
	adjust.AddDevice(&api.LinuxDevice{
		Type:     "b",
		Major:    block,
		Minor:    -1,
		FileMode: api.FileMode(os.FileMode(0o600)),
	})
}

// loopfsError names the plugin in what reaches the kubelet.
func loopfsError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("loopfs: %w", err)
}

func main() {
	name := flag.String("name", "loopfs", "the name to register as, unless the runtime started the plugin")
	idx := flag.String("idx", "50", "the index to register with, unless the runtime started the plugin")
	socket := flag.String("socket", api.DefaultSocketPath, "the runtime's NRI socket, unless the runtime started the plugin")
	hook := flag.String("hook", "/usr/libexec/loopfs/loopfs-oci-hook", "the OCI hook's path on the node")
	flag.Parse()

	var opts []stub.Option
	if os.Getenv(api.PluginNameEnvVar) == "" {
		// Not started by the runtime from its plugin directory (which
		// names the plugin and hands it a connection): a DaemonSet's
		// pod or by hand, connecting to the runtime's socket.
		opts = append(opts, stub.WithPluginName(*name), stub.WithPluginIdx(*idx),
			stub.WithSocketPath(*socket))
	}
	s, err := stub.New(&plugin{hook: *hook}, opts...)
	if err == nil {
		err = s.Run(context.Background())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loopfs-nri: %v\n", err)
		os.Exit(1)
	}
}
