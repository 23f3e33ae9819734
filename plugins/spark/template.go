package spark

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/atom-sched/atom/pkg/structs"
)

// ExecutorPodTemplateConf is the Spark property naming the executor pod
// template file ("Running Spark on Kubernetes", Pod Template): Spark
// starts each executor Pod from it, and keeps its tolerations (they are
// not among the fields Spark sets itself).
const ExecutorPodTemplateConf = structs.SparkExecutorPodTemplateConf

// podTemplate is the part of a Pod the executor pod template sets.
type podTemplate struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Spec       podTemplateSpec `json:"spec"`
}

type podTemplateSpec struct {
	Tolerations []corev1.Toleration `json:"tolerations"`
}

// ExecutorPodTemplate returns the executor pod template of job j, a Pod
// in YAML with the job's tolerations, so Spark's executor Pods tolerate
// what the job does; nil when j has none (no template is needed).
func ExecutorPodTemplate(j *structs.Job) ([]byte, error) {
	if j == nil || len(j.Tolerations) == 0 {
		return nil, nil
	}
	b, err := yaml.Marshal(podTemplate{APIVersion: "v1", Kind: "Pod", Spec: podTemplateSpec{Tolerations: j.Tolerations}})
	if err != nil {
		return nil, fmt.Errorf("spark: job %s: executor pod template: %w", j.ID, err)
	}
	return b, nil
}
