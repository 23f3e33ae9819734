package k8stest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	// GPUResource is the extended resource NVIDIA's device plugin reports.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// GPUModelLabel carries a GPU node's model (as GPU feature discovery
	// labels it; the helpers put the model name given, e.g. "A100").
	GPUModelLabel = "nvidia.com/gpu.product"
	// KwokNodeAnnotation=KwokNodeAnnotationValue marks the nodes kwok
	// plays the kubelet of: they become Ready, and Pods bound to them
	// Running.
	KwokNodeAnnotation      = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
	// NotReadyTaint is put on every new node by the TaintNodesByCondition
	// admission plugin; only the node lifecycle controller, which does not
	// run here, would remove it. The node helpers do.
	NotReadyTaint = "node.kubernetes.io/not-ready"
)

// NodeSpec describes a node for AddNode. Zero fields take defaults.
type NodeSpec struct {
	Name string
	// CPU and Memory are quantities ("96", "1Ti"); by default 12 CPUs and
	// 128Gi per GPU on a GPU node (at least 16 and 64Gi), else 32 and
	// 128Gi.
	CPU, Memory string
	// Pods is the most Pods the node takes; 110 by default.
	Pods int
	// GPUs is its nvidia.com/gpu count; GPUModel goes into GPUModelLabel.
	GPUs     int
	GPUModel string
	// Extended are further allocatable resources (e.g. rdma/ib: 1).
	Extended corev1.ResourceList
	// Labels are added to kubernetes.io/hostname, kubernetes.io/os,
	// kubernetes.io/arch and type=kwok.
	Labels map[string]string
	// Taints are the node's taints (not-ready is never among them).
	Taints []corev1.Taint
}

// Node returns the Node object for s, as the helpers create it: kwok's
// annotation, labels, capacity = allocatable.
func (s NodeSpec) Node() *corev1.Node {
	cpu, mem := s.CPU, s.Memory
	if s.GPUs > 0 {
		if cpu == "" {
			cpu = strconv.Itoa(max(16, 12*s.GPUs))
		}
		if mem == "" {
			mem = fmt.Sprintf("%dGi", max(64, 128*s.GPUs))
		}
	}
	if cpu == "" {
		cpu = "32"
	}
	if mem == "" {
		mem = "128Gi"
	}
	pods := s.Pods
	if pods == 0 {
		pods = 110
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	if s.GPUs > 0 {
		res[GPUResource] = *resource.NewQuantity(int64(s.GPUs), resource.DecimalSI)
	}
	maps.Copy(res, s.Extended)
	labels := map[string]string{
		corev1.LabelHostname:   s.Name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
		"type":                 "kwok",
	}
	if s.GPUModel != "" {
		labels[GPUModelLabel] = s.GPUModel
	}
	maps.Copy(labels, s.Labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        s.Name,
			Labels:      labels,
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue},
		},
		Spec: corev1.NodeSpec{Taints: slices.Clone(s.Taints)},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
		},
	}
}

// CreateNodes creates the nodes, removes the not-ready taint the API server
// puts on them, and waits until kwok has made them all Ready.
func (c *Cluster) CreateNodes(ctx context.Context, specs ...NodeSpec) ([]*corev1.Node, error) {
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		n, err := c.Admin.CoreV1().Nodes().Create(ctx, s.Node(), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create node %s: %w", s.Name, err)
		}
		if err := c.removeNotReadyTaint(ctx, n); err != nil {
			return nil, err
		}
		names = append(names, s.Name)
	}
	return c.WaitNodesReady(ctx, names...)
}

// removeNotReadyTaint sets n's taints to its own without not-ready.
func (c *Cluster) removeNotReadyTaint(ctx context.Context, n *corev1.Node) error {
	keep := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == NotReadyTaint })
	if len(keep) == len(n.Spec.Taints) {
		return nil
	}
	// A merge patch replaces the whole list (taints have no merge key), so
	// kwok's concurrent status writes cannot make it conflict.
	var taints any = keep
	if len(keep) == 0 {
		taints = nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
	if err != nil {
		return err
	}
	if _, err := c.Admin.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("remove %s taint from node %s: %w", NotReadyTaint, n.Name, err)
	}
	return nil
}

// WaitNodesReady waits until every named node has condition Ready=True and
// returns them.
func (c *Cluster) WaitNodesReady(ctx context.Context, names ...string) ([]*corev1.Node, error) {
	byName := map[string]*corev1.Node{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // the API server may be busy; try again
		}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		for _, n := range names {
			if node := byName[n]; node == nil || !NodeReady(node) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var missing []string
		for _, n := range names {
			if node := byName[n]; node == nil || !NodeReady(node) {
				missing = append(missing, n)
			}
		}
		return nil, fmt.Errorf("nodes not Ready: %v: %w", missing, err)
	}
	out := make([]*corev1.Node, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out, nil
}

// NodeReady reports whether n has condition Ready=True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// AddNodes creates the nodes and waits until they are Ready (see
// CreateNodes), failing t otherwise.
func (c *Cluster) AddNodes(t testing.TB, specs ...NodeSpec) []*corev1.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes, err := c.CreateNodes(ctx, specs...)
	if err != nil {
		t.Fatalf("cluster %s: %v", c.Name, err)
	}
	return nodes
}

// AddNode creates one node and waits until it is Ready.
func (c *Cluster) AddNode(t testing.TB, spec NodeSpec) *corev1.Node {
	t.Helper()
	return c.AddNodes(t, spec)[0]
}

// AddGPUNode creates a Ready node with gpus nvidia.com/gpu allocatable,
// GPUModelLabel=model, the default CPU and memory for its GPUs, and taints.
func (c *Cluster) AddGPUNode(t testing.TB, name string, gpus int, model string, taints ...corev1.Taint) *corev1.Node {
	t.Helper()
	return c.AddNode(t, NodeSpec{Name: name, GPUs: gpus, GPUModel: model, Taints: taints})
}

// AddCPUNode creates a Ready node without GPUs: cpu and memory are
// quantities ("32", "128Gi"; "" for the defaults).
func (c *Cluster) AddCPUNode(t testing.TB, name, cpu, memory string, taints ...corev1.Taint) *corev1.Node {
	t.Helper()
	return c.AddNode(t, NodeSpec{Name: name, CPU: cpu, Memory: memory, Taints: taints})
}

// StopNode makes node name NotReady as a node whose kubelet went silent
// looks: kwok stops playing its kubelet (its annotation is removed and kwok
// restarted, dropping the heartbeat it had queued) and its Ready condition
// becomes Unknown, as the node lifecycle controller would set it. Pods
// bound to it stay as they are (Running). No taint is added: nothing
// evicts here.
func (c *Cluster) StopNode(ctx context.Context, name string) error {
	patch := []byte(`{"metadata":{"annotations":{"` + KwokNodeAnnotation + `":null}}}`)
	if _, err := c.Admin.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("stop node %s: %w", name, err)
	}
	if err := c.restartKwok(ctx); err != nil {
		return fmt.Errorf("stop node %s: restart kwok: %w", name, err)
	}
	if err := c.SetNodeUnknown(ctx, name); err != nil {
		return fmt.Errorf("stop node %s: %w", name, err)
	}
	return nil
}

// SetNodeUnknown sets node name's Ready condition to Unknown, as the node
// lifecycle controller (which does not run here) does once a node's
// kubelet has been silent for its grace period: after StopKubelet of a
// real node, for instance. Its kubelet, when running, sets it back.
func (c *Cluster) SetNodeUnknown(ctx context.Context, name string) error {
	now := metav1.Now()
	status, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type:               corev1.NodeReady,
		Status:             corev1.ConditionUnknown,
		Reason:             "NodeStatusUnknown",
		Message:            "Kubelet stopped posting node status.",
		LastHeartbeatTime:  now,
		LastTransitionTime: now,
	}}}})
	if err != nil {
		return err
	}
	if _, err := c.Admin.CoreV1().Nodes().PatchStatus(ctx, name, status); err != nil {
		return fmt.Errorf("set node %s Ready=Unknown: %w", name, err)
	}
	return nil
}

// RestartNode hands node name back to kwok, which makes it Ready again,
// and waits for that.
func (c *Cluster) RestartNode(ctx context.Context, name string) error {
	patch := []byte(`{"metadata":{"annotations":{"` + KwokNodeAnnotation + `":"` + KwokNodeAnnotationValue + `"}}}`)
	if _, err := c.Admin.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("restart node %s: %w", name, err)
	}
	_, err := c.WaitNodesReady(ctx, name)
	return err
}

// SetNodeReady is StopNode (ready false) or RestartNode (ready true) for
// tests.
func (c *Cluster) SetNodeReady(t testing.TB, name string, ready bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if ready {
		err = c.RestartNode(ctx, name)
	} else {
		err = c.StopNode(ctx, name)
	}
	if err != nil {
		t.Fatalf("cluster %s: %v", c.Name, err)
	}
}
