package spark

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/structs"
)

// Version is this job type's version.
const Version = "1.0.0"

// JobType is the Spark job type: the driver (replica 0) runs spark-submit
// in client mode in its own pod; executors are Pods the coordinator binds.
type JobType struct{}

// New returns the Spark job type.
func New() plugin.JobType { return JobType{} }

// Info implements plugin.JobType.
func (JobType) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{Kind: string(structs.KindSpark), APIVersions: []string{"v1"}, Version: Version}, nil
}

// ExecutorPodTemplatePath is where Prepare writes the executor pod
// template of the driver in Pod pod: in the temporary directory (TMPDIR).
func ExecutorPodTemplatePath(pod string) string {
	return filepath.Join(os.TempDir(), "atom-"+pod+"-executor-pod.yaml")
}

// Prepare implements plugin.JobType: the spark-submit line for the driver,
// with the driver's pod IP filled in (atom runs the line itself, so no
// Kubernetes expands $(ATOM_POD_IP) for it). For a job with tolerations it
// first writes the executor pod template (ExecutorPodTemplate) to
// ExecutorPodTemplatePath.
func (JobType) Prepare(_ context.Context, _ string, t plugin.Task) (plugin.Exec, error) {
	if t.Replica != 0 {
		return plugin.Exec{}, fmt.Errorf("a spark job has one replica, its driver; replica %d has nothing to run", t.Replica)
	}
	var j structs.Job
	if err := json.Unmarshal(t.JobJSON, &j); err != nil || j.Spark == nil {
		return plugin.Exec{}, fmt.Errorf("the job's spark section is missing (ATOM_JOB_SPEC): the backend passes the job as accepted")
	}
	pod := t.Env["ATOM_POD_NAME"]
	if pod == "" {
		pod = t.ID
	}
	ns := t.Env["ATOM_NAMESPACE"]
	if ns == "" {
		ns = j.Spark.Namespace
	}
	if ns == "" && t.Env["ATOM_KUBERNETES_API"] == "" {
		return plugin.Exec{}, fmt.Errorf("spark jobs run on a Kubernetes cluster (spark-submit --master k8s://...): this task's backend gave it no Kubernetes namespace or API server (the local backend has none); submit it to a cluster with backend kubernetes")
	}
	in := Input{Job: &j, DriverPod: pod, Namespace: ns, APIServer: t.Env["ATOM_KUBERNETES_API"]}
	tmpl, err := ExecutorPodTemplate(&j)
	if err != nil {
		return plugin.Exec{}, err
	}
	if tmpl != nil {
		in.ExecutorPodTemplateFile = ExecutorPodTemplatePath(pod)
	}
	argv, err := Command(in)
	if err != nil {
		return plugin.Exec{}, err
	}
	if tmpl != nil {
		if err := os.WriteFile(in.ExecutorPodTemplateFile, tmpl, 0o644); err != nil {
			return plugin.Exec{}, fmt.Errorf("write the executor pod template that gives executors the job's tolerations: %w (set TMPDIR to a writable directory)", err)
		}
	}
	ip := t.Env[DefaultDriverHostEnv]
	if ip == "" {
		return plugin.Exec{}, fmt.Errorf("%s is not set: the Kubernetes backend sets it to the driver pod's IP (status.podIP)", DefaultDriverHostEnv)
	}
	ref := "$(" + DefaultDriverHostEnv + ")"
	for i, a := range argv {
		argv[i] = strings.ReplaceAll(a, ref, ip)
	}
	return plugin.Exec{Argv: argv}, nil
}
