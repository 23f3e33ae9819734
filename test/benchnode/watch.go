package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podTimes are when a watch first saw a Pod, saw it bound to a node, and
// saw it Running, by this process's clock.
type podTimes struct {
	created, bound, running time.Time
}

// podWatch records podTimes for the Pods of one namespace and counts
// those that exist.
type podWatch struct {
	stop chan struct{}

	mu      sync.Mutex
	times   map[string]*podTimes
	live    map[string]bool
	changed chan struct{} // closed, and replaced, at each change
}

// watchPods starts a Pod informer on namespace and returns once it has
// synced.
func watchPods(ctx context.Context, client kubernetes.Interface, namespace string) (*podWatch, error) {
	w := &podWatch{stop: make(chan struct{}), times: map[string]*podTimes{}, live: map[string]bool{}, changed: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	inf := f.Core().V1().Pods().Informer()
	note := func(o any, gone bool) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o, gone = d.Obj, true
		}
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		t := w.times[p.Name]
		if t == nil {
			t = &podTimes{created: now}
			w.times[p.Name] = t
		}
		if p.Spec.NodeName != "" && t.bound.IsZero() {
			t.bound = now
		}
		if p.Status.Phase == corev1.PodRunning && t.running.IsZero() {
			t.running = now
		}
		if gone {
			delete(w.live, p.Name)
		} else {
			w.live[p.Name] = true
		}
		close(w.changed)
		w.changed = make(chan struct{})
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { note(o, false) },
		UpdateFunc: func(_, o any) { note(o, false) },
		DeleteFunc: func(o any) { note(o, true) },
	}); err != nil {
		return nil, err
	}
	f.Start(w.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(w.stop)
		return nil, fmt.Errorf("pod watch on %s did not sync: %w", namespace, ctx.Err())
	}
	return w, nil
}

// pod is what the watch has seen of Pod name (zero times if nothing).
func (w *podWatch) pod(name string) podTimes {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.times[name]; t != nil {
		return *t
	}
	return podTimes{}
}

// until waits until cond (called under the watch's lock with its Pods'
// times and the names of those that exist) holds, saying what it waited
// for when ctx ends.
func (w *podWatch) until(ctx context.Context, what string, cond func(times map[string]*podTimes, live map[string]bool) bool) error {
	for {
		w.mu.Lock()
		ok, changed := cond(w.times, w.live), w.changed
		w.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}

func (w *podWatch) close() { close(w.stop) }
