package kube

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
)

// Pod is task t's Pod: under the backend's scheduler name, unbound if t
// is a gang's (Start binds it to t.Node), else bound to t.Node at once
// (spec.nodeName: one write to the API server fewer, which is what
// bounds starting many tasks), its job's priority class, requests =
// limits of t's allocation (whole GPUs as nvidia.com/gpu), the job's
// image running `/app/atom run [--grace G] [-- CMD ARGS...]`, the job's
// env and what atom needs to fetch the rest of its own (env), the
// service account's token bound to the Pod (audience atom) at TokenPath
// for atom to exchange, never restarted by the kubelet (atom and the
// coordinator decide). Nothing in it is there for no reader: every
// write of a Pod costs the API server, etcd and the kubelet by its size.
func (b *Backend) Pod(t *structs.Task, j *structs.Job) (*corev1.Pod, error) {
	image := j.Image
	if image == "" {
		image = b.cfg.Image
	}
	if image == "" {
		return nil, fmt.Errorf("job %s has no image (and the cluster %s has no default image): give image in its spec", j.ID, b.cfg.Cluster)
	}
	if t.Node == "" {
		return nil, fmt.Errorf("task %s has no node", t.ID)
	}
	args := []string{"run"}
	if b.cfg.Grace > 0 {
		args = append(args, "--grace", b.cfg.Grace.String())
	}
	if cmd := append(slices.Clone(j.Command), j.Args...); len(cmd) > 0 {
		args = append(append(args, "--"), cmd...)
	}
	env, err := b.env(t, j)
	if err != nil {
		return nil, err
	}
	labels, annotations := b.meta(t, j)
	res := corev1.ResourceList{}
	if t.Resources.MilliCPU > 0 {
		res[corev1.ResourceCPU] = *resource.NewMilliQuantity(t.Resources.MilliCPU, resource.DecimalSI)
	}
	if t.Resources.Memory > 0 {
		res[corev1.ResourceMemory] = *resource.NewQuantity(t.Resources.Memory, resource.BinarySI)
	}
	if t.Resources.Accels > 0 {
		res[GPUResource] = *resource.NewQuantity(t.Resources.Accels, resource.DecimalSI)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Resources.Devices)) {
		if strings.Contains(k, "/") { // an extended resource by its own name
			res[corev1.ResourceName(k)] = *resource.NewQuantity(t.Resources.Devices[k], resource.DecimalSI)
		}
	}
	var nodeName string
	if !j.IsGang() {
		nodeName = string(t.Node)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(t.ID), Namespace: b.cfg.Namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			SchedulerName:                b.cfg.SchedulerName,
			NodeName:                     nodeName,
			PriorityClassName:            PriorityClass(j.Priority),
			RestartPolicy:                corev1.RestartPolicyNever,
			Tolerations:                  slices.Clone(j.Tolerations),
			ServiceAccountName:           b.cfg.ServiceAccount,
			EnableServiceLinks:           new(bool),
			AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{
				Name:      ContainerName,
				Image:     image,
				Command:   []string{"/app/atom"},
				Args:      literalAll(args),
				Env:       env,
				Resources: corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
			}},
		},
	}
	if j.Kind == structs.KindSpark && j.Spark != nil && j.Spark.ServiceAccount != "" {
		// The driver runs spark-submit in client mode: Spark's Kubernetes
		// client asks the API server for executor Pods with the Pod's own
		// service-account token (in-cluster, as fabric8 finds it), so the
		// driver runs as the job's spark.serviceAccount, token mounted.
		p.Spec.ServiceAccountName = j.Spark.ServiceAccount
		p.Spec.AutomountServiceAccountToken = new(true)
	}
	if b.cfg.Grace > 0 {
		g := int64(math.Ceil(b.cfg.Grace.Seconds()))
		p.Spec.TerminationGracePeriodSeconds = &g
	}
	p.Spec.Volumes, p.Spec.Containers[0].VolumeMounts, p.Spec.Containers[0].EnvFrom = storage(t, j)
	vol, mount := tokenVolume()
	p.Spec.Volumes = append(p.Spec.Volumes, vol)
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, mount)
	if j.CacheMountPath != "" && b.cfg.Redis != "" {
		fuseAccess(p, b.nodeHas(t.Node, FuseResource))
	}
	return p, nil
}

// podVars are atom's variables that a task's Pod carries itself: what
// atom needs to reach the coordinator and exchange the Pod's token
// (ATOM_TLS_CA only for a coordinator that serves HTTPS). The rest of
// its environment (LaunchEnv) comes back with the allocation token.
var podVars = []string{"ATOM_COORDINATOR", "ATOM_TASK_ID", "ATOM_TOKEN_FILE", "ATOM_TLS_CA"}

// LaunchEnv is the environment of task t's atom: the local backend's
// ATOM_* (TaskEnv, with ATOM_JOB_SPEC), ATOM_TOKEN_FILE instead of
// ATOM_TOKEN, the cache's variables, the Pod's name, namespace and image
// (ATOM_IMAGE: a spark driver's executors run it), where atom serves
// launches, and ATOM_SIMULATED_GPUS for a node with fake GPUs. The Pod
// carries only podVars of it (env); atom gets the rest in exchange for
// the Pod's token (ReviewPodToken's caller answers it with the
// allocation token) and sets it before anything else. It is the same on
// every server: the state's task and job, the cluster's configuration
// and its Node.
func (b *Backend) LaunchEnv(t *structs.Task, j *structs.Job) map[string]string {
	vals := map[string]string{}
	maps.Copy(vals, taskenv.Env(t, j, b.cfg.Coordinator, ""))
	maps.Copy(vals, taskenv.TLS(b.cfg.CoordinatorCA))
	maps.Copy(vals, taskenv.CacheEnv(j, b.cfg.Redis))
	delete(vals, "ATOM_TOKEN")
	vals["ATOM_TOKEN_FILE"] = TokenPath
	if b.cfg.Heartbeat > 0 {
		vals["ATOM_HEARTBEAT"] = b.cfg.Heartbeat.String()
	}
	if b.cfg.PluginDir != "" {
		vals["ATOM_PLUGIN_DIR"] = b.cfg.PluginDir
	}
	if spec, err := json.Marshal(taskenv.JobSpec(j)); err == nil {
		vals["ATOM_JOB_SPEC"] = string(spec)
	}
	vals["ATOM_LAUNCH_LISTEN"] = "0.0.0.0:" + strconv.Itoa(LaunchPort)
	vals["ATOM_POD_NAME"] = PodName(t.ID)
	vals["ATOM_NAMESPACE"] = b.cfg.Namespace
	if vals["ATOM_IMAGE"] = j.Image; j.Image == "" {
		vals["ATOM_IMAGE"] = b.cfg.Image
	}
	maps.Copy(vals, b.simulatedGPUs(t.Node))
	return vals
}

// env is the container's environment: the job's own variables (which a
// shell of `kubectl exec` sees too), atom's podVars packed in the one
// variable structs.TaskEnvVar, which atom expands, and the Pod's IP
// through the downward API (atom's launch server advertises it). It
// fails only if a value cannot travel (a NUL).
func (b *Backend) env(t *structs.Task, j *structs.Job) ([]corev1.EnvVar, error) {
	vals := b.LaunchEnv(t, j)
	env := make([]corev1.EnvVar, 0, len(j.Env)+2)
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		if _, atoms := vals[k]; !atoms && !strings.HasPrefix(k, "ATOM_") {
			env = append(env, corev1.EnvVar{Name: k, Value: literal(j.Env[k])})
		}
	}
	own := map[string]string{}
	for _, k := range podVars {
		if v, ok := vals[k]; ok {
			own[k] = v
		}
	}
	packed, err := structs.EncodeTaskEnv(own)
	if err != nil {
		return nil, fmt.Errorf("task %s's environment: %w", t.ID, err)
	}
	return append(env,
		corev1.EnvVar{Name: structs.TaskEnvVar, Value: literal(packed)},
		corev1.EnvVar{Name: "ATOM_POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	), nil
}

// literal escapes the container's args and env values from the kubelet's
// expansion ($(VAR) becomes the variable's value, $$ a $): every $ doubled,
// the job gets its command and variables as written, as on the local
// backend (a shell's $$, awk's $1, a $(cmd) whose name is a variable).
func literal(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func literalAll(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = literal(v)
	}
	return out
}

// fuseAccess lets atom mount the dataset cache in Pod p: /dev/fuse and
// CAP_SYS_ADMIN (mount(2)), as FUSE file systems in unprivileged Pods
// need; nothing more (not privileged). The device comes from the node's
// FUSE device plugin (one FuseResource) when it has one (plugin): the
// runtime then allows it in the container's device cgroup. Otherwise it is
// the node's /dev/fuse by hostPath, which works only where the runtime
// allows the device anyway (containerd with runc does not: atom then fails
// saying so). Nodes whose container runtime applies an AppArmor
// profile that forbids mount need it relaxed for these Pods.
func fuseAccess(p *corev1.Pod, plugin bool) {
	c := &p.Spec.Containers[0]
	if plugin {
		one := *resource.NewQuantity(1, resource.DecimalSI)
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Requests[FuseResource] = one
		c.Resources.Limits[FuseResource] = one
	} else {
		dev := corev1.HostPathCharDev
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "fuse",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev/fuse", Type: &dev}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "fuse", MountPath: "/dev/fuse"})
	}
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if c.SecurityContext.Capabilities == nil {
		c.SecurityContext.Capabilities = &corev1.Capabilities{}
	}
	c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, "SYS_ADMIN")
}

// nodeHas reports whether node's Node (as the informer has it) has
// extended resource name allocatable.
func (b *Backend) nodeHas(node structs.NodeID, name corev1.ResourceName) bool {
	if b.nodes == nil {
		return false
	}
	o, ok, _ := b.nodes.GetStore().GetByKey(string(node))
	n, _ := o.(*corev1.Node)
	if !ok || n == nil {
		return false
	}
	q, ok := n.Status.Allocatable[name]
	return ok && q.Value() > 0
}

// simulatedGPUs is the environment that puts atom's GPU checks in their
// simulated mode on node, whose Node is annotated AnnotationSimulatedGPUs
// "true" (a test node with fake nvidia.com/gpu capacity and no devices),
// with the faults AnnotationSimulatedGPUFaults names: atom checks the
// allocation against simulated accelerators, as on the local backend.
// Nothing for any other node: atom asks NVML.
func (b *Backend) simulatedGPUs(node structs.NodeID) map[string]string {
	if b.nodes == nil {
		return nil
	}
	o, ok, _ := b.nodes.GetStore().GetByKey(string(node))
	n, _ := o.(*corev1.Node)
	if !ok || n == nil || n.Annotations[AnnotationSimulatedGPUs] != "true" {
		return nil
	}
	env := map[string]string{"ATOM_SIMULATED_GPUS": "true"}
	if f := n.Annotations[AnnotationSimulatedGPUFaults]; f != "" {
		env["ATOM_SIMULATED_GPU_FAULTS"] = f
	}
	return env
}
