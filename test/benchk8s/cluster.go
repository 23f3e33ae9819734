package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// startCluster starts a fresh API server (with apiServerArgs) and kwok,
// applies deploy's RBAC and PriorityClasses, makes the namespace and adds
// the GPU nodes. kwok completes no Pod: every side's Pods run until the
// end, as atom's `sleep infinity` does (kwok's pod-complete stage would
// end a Job's Pods at once).
func startCluster(ctx context.Context, name string, apiServerArgs ...string) (*k8stest.Cluster, error) {
	tools, err := k8stest.FindTools()
	if err != nil {
		return nil, err
	}
	tools.Stages = slices.DeleteFunc(tools.Stages, func(s string) bool { return filepath.Base(s) == "pod-complete.yaml" })
	kwokConfig, err := writeKwokConfig()
	if err != nil {
		return nil, err
	}
	c, err := k8stest.New(ctx, k8stest.Options{Name: name, Tools: &tools, APIServerArgs: apiServerArgs,
		KwokArgs: []string{"--config=" + kwokConfig}, Logf: func(f string, a ...any) {
			fmt.Fprintf(os.Stderr, f+"\n", a...)
		}})
	os.Remove(kwokConfig) // read by kwok as it started
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"deploy/rbac.yaml", "deploy/priorityclasses.yaml"} {
		data, err := os.ReadFile(filepath.Join(repoRoot(), f))
		if err != nil {
			c.Close()
			return nil, err
		}
		if _, err := c.ApplyYAML(ctx, nil, data); err != nil {
			c.Close()
			return nil, fmt.Errorf("apply %s: %w", f, err)
		}
	}
	if err := c.EnsureNamespace(ctx, namespace); err != nil {
		c.Close()
		return nil, err
	}
	start := time.Now()
	if err := addNodes(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "cluster %s: %d GPU nodes Ready in %.1fs\n", name, *flagNodes, time.Since(start).Seconds())
	return c, nil
}

// measure times one side on c: from calling submit until a watch has seen
// -tasks Pods of the namespace Running, with the API writes and the CPU
// the cluster's programs and this process used meanwhile.
func measure(ctx context.Context, c *k8stest.Cluster, side string, submit func() error) (result, error) {
	w, err := watchRunning(ctx, c.Admin, *flagTasks)
	if err != nil {
		return result{}, err
	}
	defer w.close()
	before, err := apiRequests(ctx, c)
	if err != nil {
		return result{}, err
	}
	stopProfile, err := profile(side)
	if err != nil {
		return result{}, err
	}
	cpuBefore := readCPU(c)
	start := time.Now()
	if err := submit(); err != nil {
		stopProfile()
		return result{}, fmt.Errorf("submit: %w", err)
	}
	r := result{submitted: time.Since(start)}
	err = w.wait(ctx)
	stopProfile()
	if err != nil {
		return result{}, err
	}
	r.running = w.at.Sub(start)
	r.cpuBy, r.cpu = readCPU(c).since(cpuBefore)
	r.created, r.bound = w.createdAt.Sub(start), w.boundAt.Sub(start)
	fmt.Fprintf(os.Stderr, "%s: %s\n", side, w.progress(start))
	if after, err := apiRequests(ctx, c); err == nil {
		r.writes, r.writesBy = after.writes.since(before.writes)
		r.reads, r.readsBy = after.reads.since(before.reads)
		r.watches, _ = after.watches.since(nil)
		r.podWatches, r.nodeWatches = int(after.watches["pods"]), int(after.watches["nodes"])
		r.openPodWatches, r.openNodeWatches = int(after.open["pods"]), int(after.open["nodes"])
	}
	return r, nil
}

// kwokConfig lets kwok play the kubelets of -kwok-parallelism Pods at once
// (its default, 4, would make it the bottleneck of both runs: a kubelet
// per node starts Pods on every node at once).
const kwokConfig = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %d
  nodePlayStageParallelism: %d
`

// writeKwokConfig writes kwokConfig to a temporary file (the same one
// for both clusters) and returns its path.
func writeKwokConfig() (string, error) {
	f, err := os.CreateTemp("", "benchk8s-kwok-*.yaml")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, kwokConfig, *flagKwok, *flagKwok)
	return f.Name(), err
}

// addNodes creates the GPU nodes, 8 creators at a time.
func addNodes(ctx context.Context, c *k8stest.Cluster) error {
	const creators = 8
	var wg sync.WaitGroup
	errs := make(chan error, creators)
	for w := range creators {
		var specs []k8stest.NodeSpec
		for i := w; i < *flagNodes; i += creators {
			specs = append(specs, k8stest.NodeSpec{Name: nodeName(i), GPUs: *flagGPUs, GPUModel: gpuModel})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.CreateNodes(ctx, specs...); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func nodeName(i int) string { return fmt.Sprintf("gpu-%03d", i) }

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// runningWatch counts the Pods of namespace that a watch has seen Running;
// done is closed, and at is set, when it has seen n. createdAt is when it
// had seen n Pods at all, boundAt when n were bound to nodes.
type runningWatch struct {
	done chan struct{}
	at   time.Time
	stop chan struct{}

	mu                 sync.Mutex
	running            map[string]bool
	created, bound     map[string]bool
	createdAt, boundAt time.Time
	// createdTimes and runningTimes are when each Pod was first seen, and
	// seen Running, in order.
	createdTimes, runningTimes []time.Time
}

// progress says how long after start a tenth, half and nine tenths of
// the Pods existed and were Running.
func (w *runningWatch) progress(start time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	at := func(ts []time.Time, f float64) float64 {
		if len(ts) == 0 {
			return 0
		}
		return ts[min(len(ts)-1, int(f*float64(len(ts))))].Sub(start).Seconds()
	}
	return fmt.Sprintf("created_s(10/50/90%%)=%.1f/%.1f/%.1f running_s(10/50/90%%)=%.1f/%.1f/%.1f",
		at(w.createdTimes, 0.1), at(w.createdTimes, 0.5), at(w.createdTimes, 0.9),
		at(w.runningTimes, 0.1), at(w.runningTimes, 0.5), at(w.runningTimes, 0.9))
}

// watchRunning starts a Pod informer on namespace and returns once it has
// synced.
func watchRunning(ctx context.Context, client kubernetes.Interface, n int) (*runningWatch, error) {
	w := &runningWatch{done: make(chan struct{}), stop: make(chan struct{}), running: map[string]bool{},
		created: map[string]bool{}, bound: map[string]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	inf := f.Core().V1().Pods().Informer()
	note := func(o any) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.created[p.Name] {
			w.createdTimes = append(w.createdTimes, time.Now())
			if w.created[p.Name] = true; len(w.created) == n {
				w.createdAt = time.Now()
			}
		}
		if p.Spec.NodeName != "" && !w.bound[p.Name] {
			if w.bound[p.Name] = true; len(w.bound) == n {
				w.boundAt = time.Now()
			}
		}
		if p.Status.Phase != corev1.PodRunning || w.running[p.Name] {
			return
		}
		w.runningTimes = append(w.runningTimes, time.Now())
		w.running[p.Name] = true
		if len(w.running) == n {
			w.at = time.Now()
			close(w.done)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, o any) { note(o) },
	}); err != nil {
		return nil, err
	}
	f.Start(w.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(w.stop)
		return nil, fmt.Errorf("pod watch did not sync: %w", ctx.Err())
	}
	return w, nil
}

// wait returns when all Pods are Running, or an error saying how many
// were when ctx ended.
func (w *runningWatch) wait(ctx context.Context) error {
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		return fmt.Errorf("%d Pods Running when time ran out: %w", len(w.running), ctx.Err())
	}
}

func (w *runningWatch) close() { close(w.stop) }

// parallel runs fn(i) for i in [0, n) on -workers goroutines and returns
// the first error.
func parallel(n int, fn func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, *flagWorkers)
	var wg sync.WaitGroup
	for range *flagWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}
