package nodetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// Spark jobs on the real node: their drivers run spark-submit in client
// mode in their task Pods and ask the API server (at the kubernetes
// Service, as k8stest's real node gives it to Pods) for executor Pods,
// which the coordinator binds. What a cluster's admin sets up for that
// beyond Start's service account is here, as Env methods for tests and as
// functions of a cluster for programs (test/benchspark).

// SparkDriverRBAC grants Spark drivers' service account what
// deploy/namespace-atom-jobs.yaml grants it (its Role and RoleBinding:
// executor Pods, their ConfigMap and claims).
func (e *Env) SparkDriverRBAC(t *testing.T) {
	t.Helper()
	require.NoError(t, SparkDriverRBAC(context.Background(), e.Cluster))
}

// SparkDriverRBAC applies the Spark drivers' Role and RoleBinding of
// deploy/namespace-atom-jobs.yaml to c.
func SparkDriverRBAC(ctx context.Context, c *k8stest.Cluster) error {
	return JobsNamespaceRBAC(ctx, c, "spark-driver")
}

// ConfigsRBAC grants the coordinator what deploy/namespace-atom-jobs.yaml
// grants it: the ConfigMaps and Secrets of atom's configs and secrets.
func ConfigsRBAC(ctx context.Context, c *k8stest.Cluster) error {
	return JobsNamespaceRBAC(ctx, c, "atom-coordinator-configs")
}

// JobsNamespaceRBAC applies the Role and RoleBinding called name of
// deploy/namespace-atom-jobs.yaml to c; that file's ResourceQuota is left
// out (no controller computes its status, so Pods would be refused).
func JobsNamespaceRBAC(ctx context.Context, c *k8stest.Cluster, name string) error {
	data, err := os.ReadFile(RepoFile("deploy/namespace-atom-jobs.yaml"))
	if err != nil {
		return err
	}
	var keep [][]byte
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var head struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return fmt.Errorf("deploy/namespace-atom-jobs.yaml: %w", err)
		}
		if (head.Kind == "Role" || head.Kind == "RoleBinding") && head.Metadata.Name == name {
			keep = append(keep, doc)
		}
	}
	if len(keep) != 2 {
		return fmt.Errorf("deploy/namespace-atom-jobs.yaml has %d Roles and RoleBindings called %s, not two", len(keep), name)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = c.ApplyYAML(ctx, nil, bytes.Join(keep, []byte("\n---\n")))
	return err
}

// HostPathClaim makes PersistentVolumeClaim name in Namespace on dir of
// the node (this machine), made if missing; the test's cleanup deletes
// its volume.
func (e *Env) HostPathClaim(t *testing.T, name, dir string) {
	t.Helper()
	pv, err := HostPathClaim(context.Background(), e.Cluster, name, dir)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.Cluster.Admin.CoreV1().PersistentVolumes().Delete(context.Background(), pv, metav1.DeleteOptions{})
	})
}

// HostPathClaim makes PersistentVolumeClaim name in Namespace, bound to a
// PersistentVolume of dir (a hostPath volume; dir is made if missing),
// and returns the volume's name. No controller-manager runs, so the claim
// is bound by hand as its binder would: the volume's claimRef names the
// claim, and both statuses say Bound.
func HostPathClaim(ctx context.Context, c *k8stest.Cluster, name, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	size := resource.MustParse("10Gi")
	class := "" // no provisioner: this volume
	pvName := "atom-test-" + name
	pvc, err := c.Admin.CoreV1().PersistentVolumeClaims(Namespace).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			VolumeName:       pvName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	dirType := corev1.HostPathDirectory
	pv, err := c.Admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: Namespace, Name: name, UID: pvc.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	pv.Status.Phase = corev1.VolumeBound
	_, err = c.Admin.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{})
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	if err == nil {
		_, err = c.Admin.CoreV1().PersistentVolumeClaims(Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	}
	if err != nil {
		return pvName, fmt.Errorf("bind claim %s to volume %s: %w", name, pvName, err)
	}
	return pvName, nil
}

// FilesConfigMap makes ConfigMap name in Namespace holding files (paths
// here), each under its base name: programs a job mounts with `configs:`.
func (e *Env) FilesConfigMap(t *testing.T, name string, files ...string) {
	t.Helper()
	require.NoError(t, FilesConfigMap(context.Background(), e.Cluster, name, files...))
}

// FilesConfigMap makes ConfigMap name in Namespace of c holding files.
func FilesConfigMap(ctx context.Context, c *k8stest.Cluster, name string, files ...string) error {
	data := map[string]string{}
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		errs = append(errs, err)
		data[filepath.Base(f)] = string(b)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_, err := c.Admin.CoreV1().ConfigMaps(Namespace).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}, Data: data}, metav1.CreateOptions{})
	return err
}

// ExecutorPods lists job's Spark executor Pods: Spark's, labelled with
// the job and spark-role=executor.
func (e *Env) ExecutorPods(t *testing.T, job string) []corev1.Pod {
	t.Helper()
	list, err := e.Cluster.Admin.CoreV1().Pods(Namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "atom.io/job=" + job + ",spark-role=executor"})
	require.NoError(t, err)
	return list.Items
}

// ExecutorWatch follows a spark job's executors as `job status` shows
// them (its tasks with an executor Pod), polling every 100 ms until the
// job ends: how many held resources at once, for how long each, and the
// job's end.
type ExecutorWatch struct {
	done chan struct{}

	mu       sync.Mutex
	first    map[structs.TaskID]time.Time // first seen holding resources
	last     map[structs.TaskID]time.Time // last seen holding resources
	pods     map[structs.TaskID]string
	now      int // executors holding resources at the last poll
	peak     int
	fellBack bool // the driver ran on with fewer executors than the peak
	job      *structs.Job
	tasks    []*structs.Task
	ended    time.Time // the poll that saw the job ended
	err      error
}

// WatchExecutors starts following job id; the watch ends with the job or
// ctx.
func WatchExecutors(ctx context.Context, c *client.Client, id structs.JobID) *ExecutorWatch {
	w := &ExecutorWatch{done: make(chan struct{}), first: map[structs.TaskID]time.Time{},
		last: map[structs.TaskID]time.Time{}, pods: map[structs.TaskID]string{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			st, err := c.Job(ctx, id)
			if err == nil && w.observe(st.Job, st.Tasks) {
				return
			}
			select {
			case <-ctx.Done():
				w.mu.Lock()
				w.err = fmt.Errorf("job %s: %w (last error %v)", id, ctx.Err(), err)
				w.mu.Unlock()
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// observe records one poll and reports whether the job has ended.
func (w *ExecutorWatch) observe(j *structs.Job, tasks []*structs.Task) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now, n, driver := time.Now(), 0, false
	for _, x := range tasks {
		switch {
		case x.Executor == "":
			driver = driver || x.State == structs.TaskRunning
		case x.State.HoldsResources():
			n++
			if _, ok := w.first[x.ID]; !ok {
				w.first[x.ID] = now
			}
			w.last[x.ID] = now
			w.pods[x.ID] = x.Executor
		}
	}
	w.now, w.peak = n, max(w.peak, n)
	if driver && !j.State.Ended() && n < w.peak {
		w.fellBack = true
	}
	w.job, w.tasks = j, tasks
	if j.State.Ended() {
		w.ended = now
	}
	return j.State.Ended()
}

// Ended is when the watch saw the job ended (zero before): within 100 ms
// of its end.
func (w *ExecutorWatch) Ended() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// Wait waits for the job's end (or the watch's context) and returns the
// job and its tasks as last seen.
func (w *ExecutorWatch) Wait() (*structs.Job, []*structs.Task, error) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.job, w.tasks, w.err
}

// Last is the job and its tasks as the last poll saw them (nil before
// the first).
func (w *ExecutorWatch) Last() (*structs.Job, []*structs.Task) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.job, w.tasks
}

// Done is closed once the watch has ended.
func (w *ExecutorWatch) Done() <-chan struct{} { return w.done }

// Peak is the most executors that held resources at once.
func (w *ExecutorWatch) Peak() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// Now is how many executors held resources at the last poll.
func (w *ExecutorWatch) Now() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// FellBack reports whether the driver ran on, the job not ended, with
// fewer executors than the peak.
func (w *ExecutorWatch) FellBack() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fellBack
}

// Pods are the executor Pods seen, by task.
func (w *ExecutorWatch) Pods() map[structs.TaskID]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.pods)
}

// ExecutorSeconds is the time executors held resources, summed over the
// executors (each from the first poll that saw it hold them to the last),
// so within a poll's 100 ms of each end.
func (w *ExecutorWatch) ExecutorSeconds() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var s float64
	for id, t := range w.first {
		s += w.last[id].Sub(t).Seconds()
	}
	return s
}

// LidarPrograms is the ConfigMap LidarJob mounts: the seed's LiDAR clean
// (test/spark/lidar_clean.py) and its idle spell (test/spark/lidar_idle.py).
const LidarPrograms = "lidar-programs"

// MakeLidarPrograms makes the ConfigMap LidarPrograms in c.
func MakeLidarPrograms(ctx context.Context, c *k8stest.Cluster) error {
	return FilesConfigMap(ctx, c, LidarPrograms, RepoFile("test/spark/lidar_clean.py"), RepoFile("test/spark/lidar_idle.py"))
}

// LidarJob is spark job name running the seed's LiDAR clean with
// lidar_idle.py: points from /data/points, cleaned to /data/cleaned, on
// claim (mounted in the driver and the executors), then idle for
// idleSeconds (to the end unless untilReleased). Its driver has 1 CPU,
// its executors 1 core and 1Gi but ask for 500m: maxExecutors > 0 scales
// them dynamically up to that (executors idle for 3 s go, their shuffle
// files kept 3 s at most), else instances run throughout. Input splits
// are 4 MiB, so 3,000,000 points (about 48 MB) are a dozen tasks.
func LidarJob(name, claim string, instances, maxExecutors int, idleSeconds int, untilReleased bool) string {
	executors := fmt.Sprintf("executor: {instances: %d, cores: 1, coreRequest: 500m, memory: 1Gi}", instances)
	if maxExecutors > 0 {
		executors = fmt.Sprintf("executor: {cores: 1, coreRequest: 500m, memory: 1Gi}\n  dynamicAllocation: {maxExecutors: %d}", maxExecutors)
	}
	args := fmt.Sprintf(`/data/points, /data/cleaned, "%d"`, idleSeconds)
	if untilReleased {
		args += ", --until-released"
	}
	return fmt.Sprintf(`kind: spark
name: %s
resources: {cpu: 1, memory: 1536Mi}
configs: [{configMap: %s, mountPath: /jobs}]
volumes: [{name: data, claim: %s, mountPath: /data}]
spark:
  mainApplicationFile: local:///jobs/lidar_idle.py
  arguments: [%s]
  %s
  sparkConf:
    spark.ui.enabled: "false"
    spark.sql.files.maxPartitionBytes: 4m
    spark.dynamicAllocation.executorIdleTimeout: 3s
    spark.dynamicAllocation.shuffleTracking.timeout: 3s
`, name, LidarPrograms, claim, args, executors)
}
