package chaos

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atom-sched/atom/test/testnet"
)

// server is one `coordinator server` process, which the suite kills,
// pauses, restarts and cuts off.
type server struct {
	id, url string
	dataDir string
	args    []string
	logPath string

	mu     sync.Mutex // guards the fields below
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	starts int
}

// cluster is the three servers, their Raft proxies and the HTTP client the
// suite watches them with.
type cluster struct {
	bin     string
	dir     string
	servers []*server
	net     *raftNet
	admin   string // the admin's token
	tokens  map[string]string
	hc      *http.Client // short timeouts: a paused server must not stall the watchers
}

const adminUser = "ops"

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freePort returns a loopback address free now and never returned before.
func freePort() (string, error) { return testnet.FreePort() }

// startCluster writes the tokens and cluster files and starts three
// servers: s1 bootstraps the cluster, s2 and s3 join it. Every server's
// Raft traffic goes through the suite's proxies.
func startCluster(bin, dir string, users []string, clusterYAML string, ttl, cycle time.Duration) (*cluster, error) {
	c := &cluster{bin: bin, dir: dir, net: newRaftNet(), tokens: map[string]string{},
		hc: &http.Client{Timeout: 2 * time.Second}}
	var doc strings.Builder
	doc.WriteString("users:\n")
	for _, u := range append([]string{adminUser}, users...) {
		c.tokens[u] = randomHex(16)
		fmt.Fprintf(&doc, "  - {name: %s, token: %s, admin: %v}\n", u, c.tokens[u], u == adminUser)
	}
	c.admin = c.tokens[adminUser]
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), []byte(doc.String()), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(clusterYAML), 0o600); err != nil {
		return nil, err
	}
	secret := randomHex(16)
	var peers []string
	type addrs struct{ http, raft, advertise string }
	var as []addrs
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("s%d", i)
		h, err := freePort()
		if err != nil {
			return nil, err
		}
		r, err := freePort()
		if err != nil {
			return nil, err
		}
		adv, err := c.net.front(id, r)
		if err != nil {
			return nil, err
		}
		as = append(as, addrs{h, r, adv})
		s := &server{id: id, url: "http://" + h, dataDir: filepath.Join(dir, id), logPath: filepath.Join(dir, id+".log")}
		c.servers = append(c.servers, s)
		peers = append(peers, "--peer", s.id+"="+s.url)
	}
	for i, s := range c.servers {
		s.args = []string{"server", "--id", s.id, "--http-addr", as[i].http,
			"--raft-addr", as[i].raft, "--raft-advertise", as[i].advertise,
			"--data-dir", s.dataDir, "--tokens", filepath.Join(dir, "tokens.yaml"), "--secret", secret,
			"--heartbeat-ttl", ttl.String(), "--cycle", cycle.String()}
		s.args = append(s.args, peers...)
		if i == 0 {
			s.args = append(s.args, "--bootstrap", "--cluster-config", filepath.Join(dir, "cluster.yaml"))
		} else {
			s.args = append(s.args, "--join", c.servers[0].url)
		}
		if err := c.start(s); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// start starts (or restarts) s from its data dir.
func (c *cluster) start(s *server) error {
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.bin, "coordinator"), s.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Ctrl-C reaches the suite, which stops them in order
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start server %s: %w", s.id, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.starts++
	s.mu.Unlock()
	return nil
}

// cleanEnv is this process's environment without ATOM_ variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ATOM_") {
			env = append(env, kv)
		}
	}
	return env
}

func (s *server) alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *server) isPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// signal sends sig to the server process (not its group: its tasks run on).
func (s *server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("server %s is not running", s.id)
	}
	switch sig {
	case syscall.SIGSTOP:
		s.paused = true
	case syscall.SIGCONT:
		s.paused = false
	}
	return s.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	if err := s.signal(syscall.SIGKILL); err != nil {
		return
	}
	s.mu.Lock()
	done := s.exited
	s.paused = false
	s.mu.Unlock()
	<-done
}

// terminate stops s the way an operator does (SIGTERM), killing it if it
// takes longer than grace.
func (s *server) terminate(grace time.Duration) {
	if !s.alive() {
		return
	}
	_ = s.signal(syscall.SIGCONT)
	_ = s.signal(syscall.SIGTERM)
	s.mu.Lock()
	done := s.exited
	s.mu.Unlock()
	select {
	case <-done:
	case <-time.After(grace):
		s.kill()
	}
}

// stop ends every server and proxy at once (cleanup after a failure).
func (c *cluster) stop() {
	for _, s := range c.servers {
		if s.alive() {
			s.kill()
		}
	}
	c.net.close()
}

// metrics reads the gauges the suite watches from s's /metrics:
// atom_raft_leader and atom_raft_applied_index.
func (c *cluster) metrics(ctx context.Context, s *server, timeout time.Duration) (leader bool, applied uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/metrics", nil)
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.admin)
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, 0, fmt.Errorf("metrics of %s: %s", s.id, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "atom_raft_leader":
			leader = f[1] == "1"
		case "atom_raft_applied_index":
			var v float64
			fmt.Sscan(f[1], &v)
			applied = uint64(v)
		}
	}
	return leader, applied, sc.Err()
}

// leader returns the server that says it leads and is not cut off, or nil.
func (c *cluster) leader(ctx context.Context) *server {
	type answer struct {
		s  *server
		ok bool
	}
	ch := make(chan answer, len(c.servers))
	n := 0
	for _, s := range c.servers {
		if !s.alive() || s.isPaused() {
			continue
		}
		n++
		go func() {
			l, _, err := c.metrics(ctx, s, 300*time.Millisecond)
			ch <- answer{s, err == nil && l && !c.net.isCut(s.id)}
		}()
	}
	var out *server
	for range n {
		if a := <-ch; a.ok {
			out = a.s
		}
	}
	return out
}

// waitLeader waits up to d for a leader.
func (c *cluster) waitLeader(ctx context.Context, d time.Duration) *server {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if l := c.leader(ctx); l != nil {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func (c *cluster) byID(id string) *server {
	for _, s := range c.servers {
		if s.id == id {
			return s
		}
	}
	return nil
}
