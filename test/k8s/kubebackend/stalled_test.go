package kubebackend_test

import (
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestStalledClusterHoldsUpNoOther: one cluster's API server stops
// answering (its connections stay open, nothing comes back, as behind a
// network partition) while the coordinator creates a Pod there. Jobs on
// the other cluster start meanwhile, well inside the 30 s a Pod create
// may take before it gives up; once the API server answers again the
// stalled job runs too.
func TestStalledClusterHoldsUpNoOther(t *testing.T) {
	a, b := k8stest.StartTwo(t, k8stest.Options{})
	prepare(t, a)
	prepare(t, b)
	a.AddNodes(t, k8stest.NodeSpec{Name: "a-gpu-1", GPUs: 8, GPUModel: "A100"})
	b.AddNodes(t, k8stest.NodeSpec{Name: "b-gpu-1", GPUs: 8, GPUModel: "A100"})
	p := startStallProxy(t, b.Host)
	b.CoordinatorKubeconfig = throughProxy(t, b.CoordinatorKubeconfig, p.addr())
	co := startCoordinator(t, time.Minute, time.Minute, map[string]*k8stest.Cluster{"a": a, "b": b})

	p.stall()
	stalled := co.submit(t, "kind: command\nname: on-b\ncluster: b\ncommand: [sleep, infinity]\nresources: {accelerators: {type: A100, count: 1}}\n")
	co.waitJob(t, stalled, "placed", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobScheduled })
	require.Eventually(t, func() bool { return p.held() > 0 }, 10*time.Second, 20*time.Millisecond, "the coordinator sent b nothing")

	since := time.Now()
	free := co.submit(t, "kind: command\nname: on-a\ncluster: a\ncommand: [sleep, infinity]\nresources: {accelerators: {type: A100, count: 1}}\n")
	require.Eventually(t, func() bool {
		st, err := co.Job(t.Context(), free)
		return err == nil && st.Job.State == structs.JobRunning
	}, 15*time.Second, 50*time.Millisecond, "a's job waited behind b's stalled Pod create")
	t.Logf("a's job ran %.1fs after it was submitted, b stalled", time.Since(since).Seconds())
	onA := pods(t, a, free)
	require.Len(t, onA, 1)
	assert.Equal(t, corev1.PodRunning, onA[0].Status.Phase)
	st, err := co.Job(t.Context(), stalled)
	require.NoError(t, err)
	assert.Equal(t, structs.JobScheduled, st.Job.State, "b's job while its API server is stalled")
	assert.Empty(t, pods(t, b, stalled))

	p.resume()
	co.waitJob(t, stalled, "runs once b answers", func(j *structs.Job, _ []*structs.Task) bool { return j.State == structs.JobRunning })
	require.Len(t, pods(t, b, stalled), 1)
}

// throughProxy writes a copy of kubeconfig whose server is addr.
func throughProxy(t *testing.T, kubeconfig, addr string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	for _, c := range cfg.Clusters {
		c.Server = "https://" + addr
	}
	path := filepath.Join(t.TempDir(), "proxied.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// stallProxy forwards TCP connections to an API server until stall: from
// then on it holds every byte either way (the connections stay open)
// until resume.
type stallProxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	cond     *sync.Cond
	stalled  bool
	requests int // reads from the client held since stall
}

func startStallProxy(t *testing.T, apiServer string) *stallProxy {
	t.Helper()
	u, err := url.Parse(apiServer)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallProxy{ln: ln, target: u.Host}
	p.cond = sync.NewCond(&p.mu)
	t.Cleanup(func() {
		p.resume()
		_ = ln.Close()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			go p.copy(up, c, true)
			go p.copy(c, up, false)
		}
	}()
	return p
}

func (p *stallProxy) addr() string { return p.ln.Addr().String() }

// copy forwards src to dst, holding what it read while stalled; toServer
// is the client's side.
func (p *stallProxy) copy(dst, src net.Conn, toServer bool) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if p.stalled && toServer {
				p.requests++
			}
			for p.stalled {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) stall() {
	p.mu.Lock()
	p.stalled, p.requests = true, 0
	p.mu.Unlock()
}

func (p *stallProxy) resume() {
	p.mu.Lock()
	p.stalled = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// held is how many reads from the client it held since stall.
func (p *stallProxy) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}
