// Package kube is atom's Kubernetes backend for one cluster: each task is
// a Pod bound to its node (spec.nodeName), and the Pods' phases come back
// as task events through a Pod informer; NodeSync follows the cluster's
// Node objects into the coordinator's state.
//
//	server ──Start(launch)────────────▶ Pod (schedulerName atom; a gang's unbound, others bound)
//	                                    once every Pod of the gang exists: Binding to each task's node
//	server ──Stop(halt)───────────────▶ Pod's activeDeadlineSeconds 1: its kubelet stops it (grace), the Pod
//	                                    kept for its log; delete Pod (grace) if unbound or no atom runs in it
//	atom in the Pod ──its bound token─▶ ReviewPodToken (TokenReview): the allocation token for it
//	Pod informer ──phase changes──────▶ EventSink: Running, Succeeded/Failed (exit code), Lost (deleted or
//	                                    evicted outside atom); a finished Pod is kept KeepFinished for its log
//	job logs ─────────────────────────▶ the Pod log endpoint (logs.go)
//	Node informer ──not Ready > grace─▶ its tasks Lost, their Pods deleted (leader)
//	sweep (leader) ───────────────────▶ Pods of tasks the state does not know, or knows ended, deleted
//	                                    (a finished one once KeepFinished has passed); unused config objects deleted
//	Start, before the Pod ────────────▶ the ConfigMaps and Secrets of the config versions the task uses (configs.go)
//	NodeSync (leader) ──Node objects──▶ NodeUpsert / NodeRemove commands
//
// Start is the same from any server (the Pod's name comes from the task):
// a new leader starts the tasks an earlier one placed and finds what it
// did, so a gang left created but unbound is bound, its missing Pods
// created first.
//
// A gang is all or none: its Pods are created unbound and bound only once
// all of them exist, so a create that fails part way leaves no replica
// running; the failed one is reported Lost before it started, which
// requeues the job (and stops the siblings, whose Pods never ran).
//
// The allocation token is never in a label, an annotation, the Pod spec or
// any other object: the Pod gets a projected service-account token bound
// to itself (audience atom, ATOM_TOKEN_FILE), which atom exchanges at the
// coordinator for its allocation token (tokenreview.go), as Vault's
// Kubernetes auth does. Starting a task costs one API write: its Pod.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
)

// Config is one cluster's backend.
type Config struct {
	// Cluster is the atom cluster these Pods belong to (label
	// atom.io/cluster).
	Cluster structs.ClusterID
	// Client talks to the cluster's API server as the coordinator.
	Client kubernetes.Interface
	// Namespace is where task Pods go; "default" if empty.
	Namespace string
	// ServiceAccount is the task Pods' service account in Namespace
	// (whose bound token atom exchanges); "default" if empty.
	ServiceAccount string
	// Coordinator is ATOM_COORDINATOR: the coordinators' HTTP URLs,
	// comma-separated, as reachable from Pods.
	Coordinator string
	// CoordinatorCA, for coordinators that serve HTTPS, is the PEM text
	// of the CA that signed their certificates: ATOM_TLS_CA, which atom
	// trusts.
	CoordinatorCA string
	// Heartbeat is ATOM_HEARTBEAT: the period atom heartbeats at.
	Heartbeat time.Duration
	// Grace is the Pod's terminationGracePeriodSeconds and atom run's
	// --grace; 0 leaves Kubernetes' default (30 s) and atom's.
	Grace time.Duration
	// Redis is the cluster's dataset cache (host:port; "" none): a job
	// with a cache section gets ATOM_CACHE_REDIS, REDIS_HOST and
	// REDIS_PORT, /dev/fuse and CAP_SYS_ADMIN, so atom can mount it.
	Redis string
	// Image is used for jobs that name none; a job without an image
	// fails when neither is set.
	Image string
	// PluginDir, if set, is ATOM_PLUGIN_DIR in the image.
	PluginDir string
	// Beat, if positive, makes the backend heartbeat every task whose Pod
	// is Running, at that period: for Pods where no atom heartbeats for
	// itself (kwok's, in tests). Zero leaves liveness to atom.
	Beat time.Duration
	// Resync is the informers' resync period; 0 means none.
	Resync time.Duration
	Log    *slog.Logger

	// SchedulerName is the task Pods' spec.schedulerName: they are
	// created unbound under it and bound by the backend through the
	// Binding API, so no other scheduler takes them. "" means
	// DefaultSchedulerName.
	SchedulerName string
	// Host is the server the backend runs in, as it asks it (see Host).
	// nil: the backend runs alone, as in its own tests: it leads, deletes
	// no Pod it did not stop itself and no config object, reports a task
	// it did not start with token "", fails a task that names a config,
	// leaves executor Pods alone, and loses tasks on NotReady nodes
	// without waiting for a term to be a heartbeat TTL old.
	Host Host
	// NodeGrace is how long a Node may be not Ready (or gone) before
	// the tasks whose Pods are bound to it are reported Lost and those
	// Pods deleted; 0 means DefaultNodeGrace. It counts from when the
	// Node stopped being Ready (see nodegrace.go).
	NodeGrace time.Duration
	// Sweep is how often the leader looks for nodes past their grace
	// and Pods to clean up; 0 means DefaultSweep.
	Sweep time.Duration
	// Now is the clock the node grace is measured with; nil: time.Now.
	Now func() time.Time
	// ImagePullGrace is how long a task's Pod may fail to pull its image
	// (ErrImagePull, ImagePullBackOff) before its task is lost saying so;
	// 0 means DefaultImagePullGrace.
	ImagePullGrace time.Duration
	// KeepFinished is how long a task's finished Pod is kept once the
	// task's end is committed, for `coordinator job logs` to read its
	// container log; 0 means DefaultKeepFinished, a negative value
	// deletes it at once. A Pod is deleted sooner when the state forgets
	// its task.
	KeepFinished time.Duration
}

// Host is the server as the backend asks it: backend.Host (what the
// state knows of a task, whether this server leads and since when: the
// sweep deletes the Pods of tasks the state does not know, knows ended
// or knows with another allocation, only on the leader; a Pod refused at
// admission is made again while its task is live; a task the backend did
// not start itself, after a restart, is reported with its current token),
// and what only Pods need of the coordinator: configs made into
// ConfigMaps and Secrets, and Spark's executor Pods taken as tasks. The
// daemon implements it over the server.
type Host interface {
	backend.Host
	// Configs returns task t's atom configs and secrets with their data
	// (taskenv.Configs), which the backend makes ConfigMaps and Secrets
	// of before t's Pod (configs.go).
	Configs(t *structs.Task, j *structs.Job) ([]taskenv.Config, error)
	// KeepConfigs returns the names (ConfigObjectName) of the
	// ConfigMaps and Secrets the leader's sweep keeps: the versions
	// tasks holding resources use and every config's current one.
	KeepConfigs() map[string]bool
	// TakeExecutor, on the leader, takes the unbound Spark executor Pod
	// req names: it records it as a task of its job within the job's
	// executor limit and returns that task and the node to bind it to;
	// an error wrapping ErrExecutorWait leaves the Pod unbound for now,
	// any other deletes it.
	TakeExecutor(ctx context.Context, req ExecutorRequest) (structs.TaskID, structs.NodeID, error)
	// ExecutorOf finds the executor task of job's Pod pod: its ID ("" if
	// none), its node and whether it holds resources.
	ExecutorOf(job structs.JobID, pod string) (id structs.TaskID, node structs.NodeID, live bool)
	// ExecutorPod is executor task id's Pod name ("" when id is no
	// executor).
	ExecutorPod(id structs.TaskID) string
}

// Defaults of Config.
const (
	DefaultSchedulerName = "atom"
	DefaultNodeGrace     = 40 * time.Second
	DefaultSweep         = 5 * time.Second
	// DefaultImagePullGrace outlasts a registry's hiccup, not a typo.
	DefaultImagePullGrace = 5 * time.Minute
)

// Backend runs tasks as Pods in one cluster. Its methods are safe for
// concurrent use.
type Backend struct {
	cfg    Config
	sink   backend.EventSink
	log    *slog.Logger
	podInf cache.SharedIndexInformer // every Pod of the cluster (podinformer.go)
	pods   podView                   // atom's task Pods of this cluster, in the namespace
	nodes  cache.SharedIndexInformer
	stopCh chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	tokens   map[structs.TaskID]string
	stopped  map[structs.TaskID]bool              // Stop called: the deletion is atom's own
	reported map[structs.TaskID]structs.TaskState // last state reported per task
	unbound  map[structs.TaskID]structs.NodeID    // Pods created, not bound yet (their gang is not complete)
	boundIDs map[structs.TaskID]bool              // Pods this backend bound
	notReady map[string]time.Time                 // Nodes not Ready (or deleted), since when
	execPods map[structs.TaskID]string            // executor tasks' Pod names
	execWhy  map[types.UID]string                 // why each waiting executor Pod waits, as last told (executors_wait.go)

	claims       cache.SharedIndexInformer // the namespace's PersistentVolumeClaims (see claims.go)
	execs        podView                   // Spark's executor Pods (see executors.go)
	execKick     chan struct{}
	listErrs     listErrors              // the informers' last list and watch errors (syncerr.go)
	foreignExecs foreignExecs            // executor Pods of other atom clusters' drivers (executors_foreign.go)
	pullSince    map[types.UID]time.Time // Pods failing to pull their image, since when (starting.go; guarded by mu)
	endedSeen    map[types.UID]time.Time // Pods of ended tasks the sweep keeps, first seen when (logs.go; guarded by mu)
	readmitting  map[types.UID]bool      // Pods refused at admission, being made again (admission.go; guarded by mu)
	refusedSince map[structs.TaskID]time.Time
	// madeConfigs are the ConfigMaps and Secrets of atom's configs known
	// to be there; configsForbidden: the coordinator may not list them
	// (configs.go; guarded by mu).
	madeConfigs      map[string]bool
	configsForbidden bool
}

// New starts the backend's informers (of every Pod, split as
// podinformer.go says, of the Nodes and of the namespace's
// PersistentVolumeClaims) and waits until they have synced or ctx ends.
func New(ctx context.Context, cfg Config, sink backend.EventSink) (*Backend, error) {
	if cfg.Client == nil {
		return nil, errors.New("kube backend: no client")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.ServiceAccount == "" {
		cfg.ServiceAccount = "default"
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = DefaultSchedulerName
	}
	if cfg.NodeGrace <= 0 {
		cfg.NodeGrace = DefaultNodeGrace
	}
	if cfg.Sweep <= 0 {
		cfg.Sweep = DefaultSweep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ImagePullGrace <= 0 {
		cfg.ImagePullGrace = DefaultImagePullGrace
	}
	if cfg.KeepFinished == 0 {
		cfg.KeepFinished = DefaultKeepFinished
	}
	b := &Backend{cfg: cfg, sink: sink, log: cfg.Log.With("cluster", cfg.Cluster), stopCh: make(chan struct{}),
		tokens: map[structs.TaskID]string{}, stopped: map[structs.TaskID]bool{}, reported: map[structs.TaskID]structs.TaskState{},
		unbound: map[structs.TaskID]structs.NodeID{}, boundIDs: map[structs.TaskID]bool{}, notReady: map[string]time.Time{},
		execPods: map[structs.TaskID]string{}, execWhy: map[types.UID]string{}, execKick: make(chan struct{}, 1),
		pullSince: map[types.UID]time.Time{}, endedSeen: map[types.UID]time.Time{},
		readmitting: map[types.UID]bool{}, refusedSince: map[structs.TaskID]time.Time{}, madeConfigs: map[string]bool{}}
	pf, err := b.newPods()
	if err != nil {
		return nil, err
	}
	if _, err := b.onPods(partTask, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { b.observe(o, false) },
		UpdateFunc: func(_, o any) { b.observe(o, false) },
		DeleteFunc: func(o any) { b.observe(o, true) },
	}, cfg.Resync); err != nil {
		return nil, err
	}
	nf := informers.NewSharedInformerFactory(cfg.Client, cfg.Resync)
	b.nodes = nf.Core().V1().Nodes().Informer()
	b.watchErrors("nodes", b.nodes)
	if _, err := b.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { b.noteNode(nil, o) },
		UpdateFunc: b.noteNode,
		DeleteFunc: b.noteNodeGone,
	}); err != nil {
		return nil, err
	}
	if err := b.startExecutors(); err != nil {
		return nil, err
	}
	b.startClaims()
	pf.Start(b.stopCh)
	nf.Start(b.stopCh)
	if !cache.WaitForCacheSync(ctx.Done(), b.podInf.HasSynced, b.nodes.HasSynced, b.claims.HasSynced) {
		close(b.stopCh)
		var pending []string
		for what, inf := range map[string]cache.SharedIndexInformer{"pods": b.podInf, "nodes": b.nodes,
			"persistentvolumeclaims in namespace " + cfg.Namespace: b.claims} {
			if !inf.HasSynced() {
				pending = append(pending, what)
			}
		}
		return nil, b.syncError(ctx, pending)
	}
	// A namespace that is not there lists as empty: say so now, not as
	// every job's Pod creation failing. (One the coordinator may not read
	// is taken as there.)
	if _, err := cfg.Client.CoreV1().Namespaces().Get(ctx, cfg.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		close(b.stopCh)
		return nil, fmt.Errorf("kube backend %s: namespace %s does not exist: create it (deploy/namespace-atom-jobs.yaml makes atom-jobs) or name an existing one as the cluster's namespace in the cluster config",
			cfg.Cluster, cfg.Namespace)
	}
	if cfg.Beat > 0 {
		b.wg.Add(1)
		go b.beat()
	}
	b.wg.Add(2)
	go b.sweepLoop()
	go b.executorLoop()
	return b, nil
}

// Close stops the informer and the heartbeats. Pods stay as they are.
func (b *Backend) Close() {
	close(b.stopCh)
	b.wg.Wait()
}

// Start creates the launch's task's Pod (a Spark executor's Pod is
// Spark's: Start binds it to the task's node); a gang's Pods are created
// unbound and bound to their nodes once all of them exist (a task that is
// no gang's is created bound). A Pod already there for the same allocation (a
// retried Start) is success. A Pod that cannot be created is
// taken back and the task reported Lost before it started: the coordinator
// requeues its job and stops the rest of the gang, none of which ran.
func (b *Backend) Start(l backend.Launch) error {
	t, j, token := l.Task, l.Job, l.Token
	if t.Executor != "" {
		return b.startExecutor(t, token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.mu.Lock()
	b.tokens[t.ID] = token
	delete(b.stopped, t.ID)
	delete(b.reported, t.ID) // an earlier allocation's reports (its Pod's events are ignored)
	delete(b.boundIDs, t.ID)
	b.mu.Unlock()
	pod, err := b.Pod(t, j)
	if err != nil {
		return b.report(t.ID, structs.TaskEvent{State: structs.TaskFailed, ExitCode: 127, Message: err.Error()})
	}
	pod.Annotations[AnnotationAlloc] = allocHash(token)
	if err := b.ensureConfigs(ctx, t, j); err != nil {
		return b.failStart(ctx, l, t.ID, err)
	}
	pods := b.cfg.Client.CoreV1().Pods(b.cfg.Namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && created.Annotations[AnnotationAlloc] != pod.Annotations[AnnotationAlloc] {
			// An earlier allocation's Pod (a service replica placed
			// again keeps its task ID): take it back, start next cycle.
			b.forceDelete(ctx, t.ID)
			return fmt.Errorf("start task %s: pod %s/%s of task %q (an earlier allocation) is still there; deleting it",
				t.ID, b.cfg.Namespace, pod.Name, created.Annotations[LabelTask])
		}
	}
	if err != nil {
		return b.failStart(ctx, l, t.ID, fmt.Errorf("create pod %s/%s: %w", b.cfg.Namespace, pod.Name, err))
	}
	if created.Spec.NodeName != "" {
		return nil // no gang's (bound at creation), or bound by an earlier Start
	}
	return b.bindGang(ctx, l)
}

// Capabilities: any server may start a task another placed (its Pod,
// named from the task, is there for every server to see), but for a
// Spark executor, which the executor loop binds; the claims are the
// namespace's (claims.go).
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		Adopts: func(l backend.Launch) bool { return l.Task.Executor == "" },
		Claims: func(names []string) map[structs.ClusterID]map[string]bool {
			return map[structs.ClusterID]map[string]bool{b.cfg.Cluster: b.Claims(names)}
		},
	}
}

// Stop stops task h.Task's Pod. One bound to its node and running atom
// (not a Spark executor's, nor a Pod of a cluster where the backend
// heartbeats for the Pods) is stopped where it is, so that its container
// log is kept like any finished Pod's (KeepFinished): its
// activeDeadlineSeconds is set to 1, and its kubelet, past that deadline,
// stops the container as a deletion would (SIGTERM to atom, which the job
// gets; SIGKILL after the Pod's terminationGracePeriodSeconds, the stop
// grace) and ends the Pod Failed (reason DeadlineExceeded); one that has
// not finished its grace and 10 s later is deleted (stopLate). Any other
// is deleted with h.Grace as its grace period (rounded up to whole
// seconds). A Pod already gone is success.
func (b *Backend) Stop(h backend.Halt) error {
	id, grace := h.Task, h.Grace
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.mu.Lock()
	b.stopped[id] = true
	delete(b.unbound, id)
	delete(b.boundIDs, id)
	b.mu.Unlock()
	secs := int64(math.Ceil(grace.Seconds()))
	name, executor := b.podName(id)
	if p := b.stopInPlace(name); p != nil && !executor {
		_, err := b.cfg.Client.CoreV1().Pods(b.cfg.Namespace).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"activeDeadlineSeconds":1}}`), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			time.AfterFunc(grace+settleUnfinished, func() { b.stopLate(id, p, secs) })
			return nil
		}
		b.log.Warn("stop pod in place failed; deleting it", "task", id, "pod", name, "err", err)
	}
	err := b.cfg.Client.CoreV1().Pods(b.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &secs})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("stop task %s: delete pod %s/%s: %w", id, b.cfg.Namespace, name, err)
	}
	return nil
}

// stopInPlace reports whether Stop ends Pod name where it is (see Stop):
// its log is kept (KeepFinished not negative), atom runs in it (no Beat),
// and the informer has it bound, not being deleted, not finished. It
// returns that Pod, or nil.
func (b *Backend) stopInPlace(name string) *corev1.Pod {
	if b.cfg.KeepFinished < 0 || b.cfg.Beat > 0 {
		return nil
	}
	o, ok, _ := b.pods.GetByKey(b.cfg.Namespace + "/" + name)
	p, _ := o.(*corev1.Pod)
	if !ok || p == nil || p.Spec.NodeName == "" || p.DeletionTimestamp != nil || podFinished(p) {
		return nil
	}
	return p
}

// stopLate deletes Pod p of task id, stopped in place, if it has not
// finished by now (its grace and settleUnfinished after Stop): a kubelet
// that does not enforce activeDeadlineSeconds (a virtual kubelet, kwok's)
// or is stuck.
func (b *Backend) stopLate(id structs.TaskID, p *corev1.Pod, secs int64) {
	select {
	case <-b.stopCh:
		return
	default:
	}
	o, ok, _ := b.pods.GetByKey(p.Namespace + "/" + p.Name)
	now, _ := o.(*corev1.Pod)
	if !ok || now == nil || now.UID != p.UID || now.DeletionTimestamp != nil || podFinished(now) {
		return
	}
	b.log.Info("pod stopped in place has not finished; deleting it", "task", id, "pod", p.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := b.cfg.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &secs, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		b.log.Warn("delete pod", "task", id, "pod", p.Name, "err", err)
	}
}

// forceDelete deletes task id's Pod at once (grace 0), as
// atom's own deletion, logging what fails.
func (b *Backend) forceDelete(ctx context.Context, id structs.TaskID) {
	b.mu.Lock()
	b.stopped[id] = true
	delete(b.unbound, id)
	delete(b.boundIDs, id)
	b.mu.Unlock()
	zero := int64(0)
	name, _ := b.podName(id)
	err := b.cfg.Client.CoreV1().Pods(b.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		b.log.Warn("delete pod", "task", id, "pod", name, "err", err)
	}
}

// meta is the labels and annotations of t's Pod, each read by someone:
// labels atom.io/managed-by and atom.io/cluster select the backend's Pods
// (its informer, on every server, a new leader's included), atom.io/job
// keeps them out of the other Pods a node runs (nodereserved.go) and is
// what `kubectl get pods -l` finds a job's Pods by; annotation
// atom.io/task is the exact task ID the backend reads back from a Pod,
// atom.io/job the job's, which a spark executor's driver is checked by
// (both name a Pod's logs in deploy/vector.yaml). The rest is the
// coordinator's to tell (`coordinator job status`): the owner, attempt,
// replica and node are on the task.
func (b *Backend) meta(t *structs.Task, j *structs.Job) (labels, annotations map[string]string) {
	labels = map[string]string{
		LabelManaged: "atom",
		LabelCluster: LabelValue(string(b.cfg.Cluster)),
		LabelJob:     LabelValue(string(j.ID)),
	}
	annotations = map[string]string{
		LabelJob:  string(j.ID),
		LabelTask: string(t.ID),
	}
	return labels, annotations
}
