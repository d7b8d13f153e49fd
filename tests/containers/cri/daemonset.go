// SPDX-License-Identifier: GPL-2.0
//
// The kubelet's part in running a DaemonSet's pod on a node: the pod
// template of a manifest turned into the CRI calls the kubelet makes.
// The manifest is read strictly: a field this translation does not know
// stops it, so that nothing the manifest asks for is silently dropped.

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type objectMeta struct {
	Name      string            `yaml:"name"`
	Namespace string            `yaml:"namespace"`
	Labels    map[string]string `yaml:"labels"`
}

type securityContext struct {
	RunAsUser                *int64 `yaml:"runAsUser"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   bool   `yaml:"readOnlyRootFilesystem"`
	Capabilities             struct {
		Add  []string `yaml:"add"`
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

type containerSpec struct {
	Name            string          `yaml:"name"`
	Image           string          `yaml:"image"`
	Command         []string        `yaml:"command"`
	Args            []string        `yaml:"args"`
	SecurityContext securityContext `yaml:"securityContext"`
	Resources       struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type podSpec struct {
	// Where and before what the scheduler places the pod: on a node
	// the pod is already placed on, nothing to do.
	PriorityClassName string              `yaml:"priorityClassName"`
	NodeSelector      map[string]string   `yaml:"nodeSelector"`
	Tolerations       []map[string]string `yaml:"tolerations"`
	Containers        []containerSpec     `yaml:"containers"`
	Volumes           []struct {
		Name     string `yaml:"name"`
		HostPath struct {
			Path string `yaml:"path"`
			Type string `yaml:"type"`
		} `yaml:"hostPath"`
	} `yaml:"volumes"`
}

type daemonSetManifest struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     podSpec    `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readDaemonSet(path string) *daemonSetManifest {
	data, err := os.ReadFile(path)
	if err != nil {
		die("%v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	ds := &daemonSetManifest{}
	if err := dec.Decode(ds); err != nil {
		die("%s: %v", path, err)
	}
	if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" {
		die("%s: not an apps/v1 DaemonSet", path)
	}
	// The API server refuses a template its selector does not select.
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Metadata.Labels[k] != v {
			die("%s: the template's labels lack the selector's %s=%s", path, k, v)
		}
	}
	if len(ds.Spec.Template.Spec.Containers) != 1 {
		die("%s: one container expected", path)
	}
	return ds
}

// quantity reads a resource quantity as a count of its unit: "64Mi" is
// 64 << 20 bytes, "10m" of CPU 10 millicores ("1" is 1000).
func quantity(q string, milli bool) int64 {
	units := map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
	mul := int64(1)
	if milli {
		mul = 1000
		if n, ok := strings.CutSuffix(q, "m"); ok {
			q, mul = n, 1
		}
	} else {
		for suffix, m := range units {
			if n, ok := strings.CutSuffix(q, suffix); ok {
				q, mul = n, m
			}
		}
	}
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		die("quantity %q: %v", q, err)
	}
	return n * mul
}

// resources is what the kubelet asks of the runtime for a container's
// requests and limits: CPU shares from the request (1024 a CPU, 2 at
// least), the memory limit.
func resources(c *containerSpec) *cri.LinuxContainerResources {
	r := &cri.LinuxContainerResources{CpuShares: 2}
	if q, ok := c.Resources.Requests["cpu"]; ok {
		r.CpuShares = max(quantity(q, true)*1024/1000, 2)
	}
	if q, ok := c.Resources.Limits["memory"]; ok {
		r.MemoryLimitInBytes = quantity(q, false)
	}
	return r
}

// hostPaths binds the container's hostPath volumes, checking each
// volume's type as the kubelet does.
func hostPaths(spec *podSpec, c *containerSpec) []*cri.Mount {
	var ms []*cri.Mount
	for _, vm := range c.VolumeMounts {
		found := false
		for _, v := range spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			found = true
			st, err := os.Stat(v.HostPath.Path)
			if v.HostPath.Type == "Directory" && (err != nil || !st.IsDir()) {
				die("hostPath %s is not a directory", v.HostPath.Path)
			}
			ms = append(ms, &cri.Mount{HostPath: v.HostPath.Path,
				ContainerPath: vm.MountPath, Readonly: vm.ReadOnly})
		}
		if !found {
			die("volume %q is not in the pod", vm.Name)
		}
	}
	return ms
}

func containerSecurity(sc *securityContext, ns *cri.NamespaceOption) *cri.LinuxContainerSecurityContext {
	out := &cri.LinuxContainerSecurityContext{
		NamespaceOptions: ns,
		ReadonlyRootfs:   sc.ReadOnlyRootFilesystem,
		Capabilities: &cri.Capability{AddCapabilities: sc.Capabilities.Add,
			DropCapabilities: sc.Capabilities.Drop},
		MaskedPaths:   maskedPaths,
		ReadonlyPaths: readonlyPaths,
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = &cri.Int64Value{Value: *sc.RunAsUser}
	}
	if sc.AllowPrivilegeEscalation != nil {
		out.NoNewPrivs = !*sc.AllowPrivilegeEscalation
	}
	return out
}

// daemonSet runs the manifest's pod on this node, on the pod network,
// and prints its id and its container's.
func (c *client) daemonSet(ctx context.Context, path string) {
	ds := readDaemonSet(path)
	spec := &ds.Spec.Template.Spec
	ctr := &spec.Containers[0]
	ns := &cri.NamespaceOption{Network: cri.NamespaceMode_POD,
		Pid: cri.NamespaceMode_CONTAINER, Ipc: cri.NamespaceMode_POD}
	pcfg := &cri.PodSandboxConfig{
		Metadata: &cri.PodSandboxMetadata{Name: ds.Metadata.Name + "-node",
			Namespace: ds.Metadata.Namespace, Uid: ds.Metadata.Name + "-node-uid"},
		Labels: ds.Spec.Template.Metadata.Labels,
		Linux: &cri.LinuxPodSandboxConfig{
			SecurityContext: &cri.LinuxSandboxSecurityContext{NamespaceOptions: ns},
		},
	}
	p, err := c.rt.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: pcfg})
	if err != nil {
		die("RunPodSandbox: %v", err)
	}
	c.keep(p.PodSandboxId, pcfg)
	cfg := &cri.ContainerConfig{
		Metadata: &cri.ContainerMetadata{Name: ctr.Name},
		Image:    &cri.ImageSpec{Image: ctr.Image},
		Command:  ctr.Command,
		Args:     ctr.Args,
		Labels:   ds.Spec.Template.Metadata.Labels,
		Mounts:   hostPaths(spec, ctr),
		Linux: &cri.LinuxContainerConfig{Resources: resources(ctr),
			SecurityContext: containerSecurity(&ctr.SecurityContext, ns)},
	}
	r, err := c.rt.CreateContainer(ctx, &cri.CreateContainerRequest{
		PodSandboxId: p.PodSandboxId, Config: cfg, SandboxConfig: pcfg})
	if err != nil {
		die("CreateContainer: %v", err)
	}
	if _, err := c.rt.StartContainer(ctx, &cri.StartContainerRequest{ContainerId: r.ContainerId}); err != nil {
		die("StartContainer: %v", err)
	}
	fmt.Println(p.PodSandboxId, r.ContainerId)
}
