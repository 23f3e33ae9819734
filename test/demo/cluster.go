package demo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/testnet"
)

// demo is one run of the scenario.
type demo struct {
	cfg   Config
	out   io.Writer
	start time.Time
	// done is the last step that happened, failed the one that did not.
	done, failed int

	servers []*server
	addr    string            // the server the CLI talks to
	tokens  map[string]string // user -> token
	jobs    map[string]string // job name -> ID
	webPort int               // the service's replica i listens on webPort+i
	killed  *server           // the leader step 5 killed
	stopped bool              // shutdown ran
}

// server is one `coordinator server` process.
type server struct {
	id, url, raftAddr string
	args              []string
	log               string
	cmd               *exec.Cmd
	exited            chan struct{}
}

const admin = "ops"

// users are the tokens file's users; ops is the admin.
var users = []string{admin, "alice", "bob"}

func (d *demo) path(name string) string { return filepath.Join(d.cfg.WorkDir, name) }

func (d *demo) bin(name string) string { return filepath.Join(d.cfg.BinDir, name) }

// client returns an API client for user on the CLI's server.
func (d *demo) client(user string) *client.Client { return client.New(d.addr, d.tokens[user]) }

// freePort returns a loopback address free now and never returned before.
func freePort() (string, error) { return testnet.FreePort() }

// freePortPair finds p such that p and p+1 are free on loopback.
func freePortPair() (int, error) {
	for range 50 {
		a, err := freePort()
		if err != nil {
			return 0, err
		}
		_, ps, _ := net.SplitHostPort(a)
		p, _ := strconv.Atoi(ps)
		if p >= 65535 {
			continue
		}
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1))); err == nil {
			ln.Close()
			return p, nil
		}
	}
	return 0, errors.New("no two consecutive free ports on 127.0.0.1")
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startServer starts (or restarts) s with its arguments.
func (d *demo) startServer(s *server) error {
	f, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(d.bin("coordinator"), s.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = cleanEnv()
	// Its own process group: Ctrl-C at the terminal reaches the demo,
	// which stops the servers in order (jobs first), not the servers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start server %s: %w", s.id, err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(s.exited) }()
	return nil
}

// cleanEnv is this process's environment without ATOM_* variables.
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

// isLeader asks s's /metrics whether it leads.
func (d *demo) isLeader(ctx context.Context, s *server) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.tokens[admin])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "atom_raft_leader" {
			return f[1] == "1"
		}
	}
	return false
}

// leader waits until exactly one live server says it leads.
func (d *demo) leader(ctx context.Context) (*server, error) {
	var lead *server
	err := d.waitFor(ctx, "a leader is elected", func() (bool, string) {
		var leads []*server
		for _, s := range d.servers {
			if s.alive() && d.isLeader(ctx, s) {
				leads = append(leads, s)
			}
		}
		if len(leads) != 1 {
			return false, fmt.Sprintf("%d servers say they lead", len(leads))
		}
		lead = leads[0]
		return true, ""
	})
	return lead, err
}

// waitFor polls cond until it holds, the context ends or cfg.Wait passes;
// cond returns what it saw, for the error.
func (d *demo) waitFor(ctx context.Context, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(d.cfg.Wait)
	var last string
	for {
		ok, saw := cond()
		if ok {
			return nil
		}
		if saw != "" {
			last = saw
		}
		if time.Now().After(deadline) {
			if last == "" {
				return fmt.Errorf("%s: not within %s", what, d.cfg.Wait)
			}
			return fmt.Errorf("%s: not within %s (last seen: %s)", what, d.cfg.Wait, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// cliResult is one CLI run.
type cliResult struct {
	out  string
	code int
}

// coordinator runs the CLI as user against d.addr (or addr, when given as
// the first argument "--addr=URL"), printing the command line and its
// output as a user would see them.
func (d *demo) coordinator(ctx context.Context, user string, args ...string) (cliResult, error) {
	shown := append([]string{"coordinator"}, args...)
	fmt.Fprintf(d.out, "%s$ %s\n", user, strings.Join(quoteAll(shown), " "))
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin("coordinator"), args...)
	cmd.Dir = d.cfg.WorkDir
	cmd.Env = append(cleanEnv(), "ATOM_ADDR="+d.addr, "ATOM_TOKEN="+d.tokens[user])
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	out := buf.String()
	d.print(out)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return cliResult{out: out}, nil
	case errors.As(err, &ee) && ctx.Err() == nil:
		return cliResult{out: out, code: ee.ExitCode()}, nil
	case ctx.Err() != nil:
		return cliResult{out: out, code: -1}, fmt.Errorf("coordinator %s: %w", strings.Join(args, " "), ctx.Err())
	}
	return cliResult{out: out, code: -1}, fmt.Errorf("coordinator %s: %w", strings.Join(args, " "), err)
}

// mustRun runs the CLI and fails unless it exits 0.
func (d *demo) mustRun(ctx context.Context, user string, args ...string) (string, error) {
	r, err := d.coordinator(ctx, user, args...)
	if err != nil {
		return r.out, err
	}
	if r.code != 0 {
		return r.out, fmt.Errorf("coordinator %s exited %d: %s", strings.Join(args, " "), r.code, strings.TrimSpace(r.out))
	}
	return r.out, nil
}

// submit runs `coordinator job submit -f file [extra...]` as user and
// returns the new job's ID.
func (d *demo) submit(ctx context.Context, user, file string, extra ...string) (structs.JobID, error) {
	out, err := d.mustRun(ctx, user, append([]string{"job", "submit", "-f", file}, extra...)...)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "job" && f[2] == "submitted:" {
			return structs.JobID(f[1]), nil
		}
	}
	return "", fmt.Errorf("job submit -f %s did not say which job it made: %q", file, out)
}

func (d *demo) print(out string) {
	if out == "" {
		return
	}
	fmt.Fprint(d.out, out)
	if !strings.HasSuffix(out, "\n") {
		fmt.Fprintln(d.out)
	}
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$;&|<>*?()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

// writeSpec writes a file into the work dir and shows it.
func (d *demo) writeSpec(user, name, body string) error {
	if err := os.WriteFile(d.path(name), []byte(body), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%s$ cat %s\n", user, name)
	d.print(body)
	return nil
}

// shutdown cancels every job that has not ended, waits for their tasks,
// stops the servers and kills whatever of the demo is still running. It
// returns an error if it had to kill anything or could not stop it.
func (d *demo) shutdown() error {
	if d.stopped {
		return nil
	}
	d.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var errs []error
	if live := d.liveServer(ctx); live != nil {
		c := client.New(live.url, d.tokens[admin])
		if jobs, err := c.ListJobs(ctx, client.JobFilter{}); err == nil {
			for _, j := range jobs {
				if !j.State.Ended() {
					// A job that ended meanwhile is a conflict, not a failure.
					if _, err := c.CancelJob(ctx, j.ID); err != nil && !errors.Is(err, client.ErrConflict) {
						errs = append(errs, fmt.Errorf("cancel %s: %w", j.ID, err))
					}
				}
			}
			// Wait until no task holds resources: atom has stopped them.
			deadline := time.Now().Add(45 * time.Second)
			for time.Now().Before(deadline) && d.tasksHolding(ctx, c) > 0 {
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	for _, s := range d.servers {
		if s.alive() {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, s := range d.servers {
		if s.cmd == nil {
			continue
		}
		select {
		case <-s.exited:
		case <-time.After(40 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
			errs = append(errs, fmt.Errorf("server %s did not stop on SIGTERM within 40s: killed", s.id))
		}
	}
	if left := sweep(10*time.Second, d.cfg.WorkDir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("%d processes were left behind and had to be killed: %s", len(left), strings.Join(left, "; ")))
	}
	return errors.Join(errs...)
}

// liveServer returns a server that answers: the CLI's first, as it has
// seen the CLI's writes.
func (d *demo) liveServer(ctx context.Context) *server {
	servers := slices.Clone(d.servers)
	slices.SortStableFunc(servers, func(a, b *server) int {
		if a.url == d.addr {
			return -1
		}
		if b.url == d.addr {
			return 1
		}
		return 0
	})
	for _, s := range servers {
		if !s.alive() {
			continue
		}
		c := client.New(s.url, d.tokens[admin])
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Clusters(cctx)
		cancel()
		if err == nil {
			return s
		}
	}
	return nil
}

func (d *demo) tasksHolding(ctx context.Context, c *client.Client) int {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return 0
	}
	n := 0
	for _, nd := range nodes {
		n += nd.Tasks
	}
	return n
}

// sweep waits up to grace for every process whose command line or
// environment mentions one of dirs to end (the servers, atom and the
// tasks it runs, mpirun and its ranks: a task's HOME is under the work
// dir), then kills those left and returns them.
func sweep(grace time.Duration, dirs ...string) []string {
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && len(demoProcesses(dirs...)) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	var left []string
	for _, p := range demoProcesses(dirs...) {
		left = append(left, fmt.Sprintf("pid %d %s", p.pid, p.cmdline))
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	return left
}

type proc struct {
	pid     int
	cmdline string
}

// demoProcesses lists processes (other than this one and its parents)
// whose command line or environment mentions one of dirs. Linux only:
// elsewhere it finds nothing.
func demoProcesses(dirs ...string) []proc {
	skip := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !skip[pid]; pid = parent(pid) {
		skip[pid] = true
	}
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || skip[pid] {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if len(cmdline) == 0 { // a zombie or a kernel thread
			continue
		}
		for _, dir := range dirs {
			if dir != "" && (bytes.Contains(cmdline, []byte(dir)) || bytes.Contains(environ, []byte(dir))) {
				out = append(out, proc{pid, strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
				break
			}
		}
	}
	return out
}

// parent returns pid's parent, 0 if unknown.
func parent(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// DemoProcesses lists the processes whose command line or environment
// mentions one of dirs, as "pid command line": what a clean demo leaves
// none of.
func DemoProcesses(dirs ...string) []string {
	var out []string
	for _, p := range demoProcesses(dirs...) {
		out = append(out, fmt.Sprintf("pid %d %s", p.pid, p.cmdline))
	}
	return out
}
