// Package taskenv is the environment every backend gives a task's atom:
// its allocation as ATOM_* variables and the job as accepted
// (ATOM_JOB_SPEC). The local and Kubernetes backends share it, so a job
// sees the same variables wherever it runs.
package taskenv

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// Env is the environment atom reads its allocation from; addr lists every
// coordinator server (comma-separated). A task holding edge devices gets
// them in ATOM_DEVICES, TYPE:INDEX comma-separated
// ("jetson-xavier:0,jetson-xavier:1"), as ATOM_ACCELERATORS lists its
// accelerators.
func Env(t *structs.Task, j *structs.Job, addr, token string) map[string]string {
	var accels []string
	for _, i := range t.Accels.Indices() {
		accels = append(accels, strconv.Itoa(i))
	}
	env := map[string]string{
		"ATOM_COORDINATOR":  addr,
		"ATOM_JOB_ID":       string(j.ID),
		"ATOM_JOB_KIND":     string(j.Kind),
		"ATOM_TASK_ID":      string(t.ID),
		"ATOM_TOKEN":        token,
		"ATOM_REPLICA":      strconv.Itoa(t.Index),
		"ATOM_REPLICAS":     strconv.Itoa(j.ShapeAt(j.Shape).Replicas),
		"ATOM_ATTEMPT":      strconv.Itoa(t.Attempt),
		"ATOM_NODE":         string(t.Node),
		"ATOM_ACCEL_TYPE":   t.Resources.AccelType,
		"ATOM_ACCELERATORS": strings.Join(accels, ","),
		"ATOM_CPU_MILLI":    strconv.FormatInt(t.Resources.MilliCPU, 10),
		"ATOM_MEMORY_BYTES": strconv.FormatInt(t.Resources.Memory, 10),
	}
	if d := Devices(t); d != "" {
		env["ATOM_DEVICES"] = d
	}
	return env
}

// Devices is task t's ATOM_DEVICES: TYPE:INDEX of each edge device it
// holds, by type then index, comma-separated ("" for none).
func Devices(t *structs.Task) string {
	var out []string
	for _, d := range slices.Sorted(maps.Keys(t.Devices)) {
		for _, i := range t.Devices[d] {
			out = append(out, d+":"+strconv.Itoa(i))
		}
	}
	return strings.Join(out, ",")
}

// JobSpec is what ATOM_JOB_SPEC carries: the job as accepted, without its
// status or its env (which the task has already). Its tolerations and
// volumes are there for a spark driver, whose executor Pods get them.
func JobSpec(j *structs.Job) *structs.Job {
	return &structs.Job{ID: j.ID, Name: j.Name, Kind: j.Kind, Owner: j.Owner, Project: j.Project,
		Priority: j.Priority, Image: j.Image, Command: j.Command, Args: j.Args, Replicas: j.Replicas,
		Resources: j.Resources, MPI: j.MPI, Spark: j.Spark,
		CacheMountPath: j.CacheMountPath, Datasets: j.Datasets,
		Tolerations: j.Tolerations, Volumes: j.Volumes}
}

// CacheEnv is the dataset cache environment of a task of j on a cluster
// whose cache Redis is at redis (host:port): REDIS_HOST and REDIS_PORT for
// every job, which a job's Redis client connects with (a job's own env
// wins), and for a job with a cache section ATOM_CACHE_REDIS too, which
// atom mounts the cache from. Empty on a cluster without a cache.
func CacheEnv(j *structs.Job, redis string) map[string]string {
	if redis == "" {
		return nil
	}
	env := map[string]string{}
	if j.CacheMountPath != "" {
		env["ATOM_CACHE_REDIS"] = redis
	}
	if host, port, err := net.SplitHostPort(redis); err == nil {
		for k, v := range map[string]string{"REDIS_HOST": host, "REDIS_PORT": port} {
			if _, set := j.Env[k]; !set {
				env[k] = v
			}
		}
	}
	return env
}

// ClusterRedis returns the cache Redis address of node's cluster
// (clusters and nodes as in the state), or "" when it has none.
func ClusterRedis(clusters map[structs.ClusterID]*structs.Cluster, nodes map[structs.NodeID]*structs.Node, node structs.NodeID) string {
	n := nodes[node]
	if n == nil {
		return ""
	}
	if c := clusters[n.Cluster]; c != nil {
		return c.Redis
	}
	return ""
}
