package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// The failover run starts each server as a child process of this binary
// (-child) with a tiny control API on loopback, so the leader can be
// killed with SIGKILL. This API is the benchmark's, not the product's.
var (
	flagID        = flag.String("id", "", "internal: child server ID")
	flagRaftAddr  = flag.String("raft", "", "internal: child Raft address")
	flagCtlAddr   = flag.String("ctl", "", "internal: child control address")
	flagDataDir   = flag.String("data", "", "internal: child data dir")
	flagBootstrap = flag.Bool("bootstrap", false, "internal: child bootstraps")
	flagJoin      = flag.String("join", "", "internal: control address of a server to join")
)

// status is what GET /status returns.
type status struct {
	ID     string `json:"id"`
	Leader string `json:"leader"`
	Peers  int    `json:"peers"`
}

// applyReply is what POST /apply returns.
type applyReply struct {
	Result    json.RawMessage `json:"result,omitempty"`
	Err       string          `json:"err,omitempty"`
	Retryable bool            `json:"retryable,omitempty"`
}

func runChild() error {
	cfg := server.Config{
		ID: *flagID, RaftAddr: *flagRaftAddr, DataDir: *flagDataDir, Bootstrap: *flagBootstrap,
		HeartbeatTTL: time.Hour, Logger: logger(),
		LeaderLeaseTimeout: *flagLease, HeartbeatTimeout: *flagHB, ElectionTimeout: *flagHB,
	}
	if *flagJoin != "" {
		cfg.Join = []string{*flagJoin}
		cfg.JoinFunc = func(ctx context.Context, addr, id, raftAddr string) error {
			return post(ctx, "http://"+addr+"/join?id="+id+"&addr="+raftAddr, nil, nil)
		}
	}
	s, err := server.New(cfg)
	if err != nil {
		return err
	}
	defer s.Shutdown()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		leader, _ := s.Leader()
		peers, _ := s.Peers()
		_ = json.NewEncoder(w).Encode(status{ID: s.ID(), Leader: leader, Peers: len(peers)})
	})
	mux.HandleFunc("POST /join", func(w http.ResponseWriter, r *http.Request) {
		if err := s.AddVoter(r.URL.Query().Get("id"), r.URL.Query().Get("addr")); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("POST /apply", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c, err := state.Decode(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var rep applyReply
		res, err := s.Apply(r.Context(), c)
		switch {
		case errors.Is(err, server.ErrNotLeader), errors.Is(err, server.ErrOutcomeUnknown):
			rep.Err, rep.Retryable = err.Error(), true
		case err != nil:
			rep.Err = err.Error()
		default:
			rep.Result, _ = json.Marshal(res)
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
	mux.HandleFunc("GET /job", func(w http.ResponseWriter, r *http.Request) {
		var st structs.JobState
		s.Read(func(x *state.State) {
			if j := x.Jobs[structs.JobID(r.URL.Query().Get("id"))]; j != nil {
				st = j.State
			}
		})
		_, _ = io.WriteString(w, string(st))
	})
	return http.ListenAndServe(*flagCtlAddr, mux)
}

// child is one server process.
type child struct {
	id, raft, ctl, data string
	cmd                 *exec.Cmd
}

func (c *child) start(bootstrap bool, join string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-child", "-id", c.id, "-raft", c.raft, "-ctl", c.ctl, "-data", c.data,
		"-lease", flagLease.String(), "-heartbeat", flagHB.String()}
	if bootstrap {
		args = append(args, "-bootstrap")
	}
	if join != "" {
		args = append(args, "-join", join)
	}
	log, err := os.OpenFile(filepath.Join(filepath.Dir(c.data), c.id+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	c.cmd = exec.Command(self, args...)
	c.cmd.Stdout, c.cmd.Stderr = log, log
	return c.cmd.Start()
}

func (c *child) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Kill() // SIGKILL: no graceful anything
		_ = c.cmd.Wait()
		c.cmd = nil
	}
}

func (c *child) status() (status, error) {
	var st status
	err := get("http://"+c.ctl+"/status", &st)
	return st, err
}

// failover kills the leader -rounds times and returns the median time from
// the kill to a new leader's committed placement, in ms.
func failover(dir string) (float64, error) {
	var kids []*child
	for i := range 3 {
		raft, err := freeAddr()
		if err != nil {
			return 0, err
		}
		ctl, err := freeAddr()
		if err != nil {
			return 0, err
		}
		kids = append(kids, &child{id: fmt.Sprintf("s%d", i), raft: raft, ctl: ctl, data: filepath.Join(dir, fmt.Sprintf("s%d", i))})
	}
	defer func() {
		for _, k := range kids {
			k.kill()
		}
	}()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	for i, k := range kids {
		join := ""
		if i > 0 {
			join = kids[0].ctl
		}
		if err := k.start(i == 0, join); err != nil {
			return 0, err
		}
	}
	formed := func() bool {
		for _, k := range kids {
			if st, err := k.status(); err != nil || st.Leader == "" || st.Peers != 3 {
				return false
			}
		}
		return true
	}
	if err := until(30*time.Second, formed); err != nil {
		return 0, fmt.Errorf("cluster never formed (logs in %s): %w", dir, err)
	}
	if err := submitAny(kids, &state.NodeUpsert{Node: schedtest.C64("node-0")}); err != nil {
		return 0, err
	}
	if err := submitAny(kids, &state.QuotaSet{Quota: &structs.Quota{Scope: structs.UserScope(owner(0)),
		Limits: structs.ResourceList{"cpu": 1 << 50, "memory": 1 << 60}}}); err != nil {
		return 0, err
	}
	var took []time.Duration
	for r := range *flagRounds {
		// Warm: a placement under the current leader.
		if _, err := placeJob(kids, fmt.Sprintf("warm-%d", r)); err != nil {
			return 0, err
		}
		leader := leaderOf(kids)
		if leader == nil {
			return 0, errors.New("no leader")
		}
		t0 := time.Now()
		leader.kill()
		jobAt, err := placeJob(kids, fmt.Sprintf("after-kill-%d", r))
		if err != nil {
			return 0, err
		}
		d := jobAt.Sub(t0)
		took = append(took, d)
		fmt.Printf("failover_round=%d killed=%s took_ms=%.0f\n", r, leader.id, ms(d))
		// Restart the killed server from its data dir for the next round.
		if err := leader.start(false, ""); err != nil {
			return 0, err
		}
		if err := until(30*time.Second, formed); err != nil {
			return 0, fmt.Errorf("restarted %s never rejoined: %w", leader.id, err)
		}
	}
	slices.Sort(took)
	fmt.Printf("failover_max_ms=%.0f\n", ms(took[len(took)-1]))
	return ms(took[len(took)/2]), nil
}

// placeJob submits a job through whoever leads (retrying) and returns when
// a server reports it placed.
func placeJob(kids []*child, name string) (time.Time, error) {
	j := job(name, 0)
	j.ID = structs.JobID(name)
	if err := submitAny(kids, &state.JobSubmit{RequestID: name, Job: j, Now: time.Now()}); err != nil {
		return time.Time{}, err
	}
	var at time.Time
	err := until(30*time.Second, func() bool {
		for _, k := range kids {
			if k.cmd == nil {
				continue
			}
			var st string
			if err := getText("http://"+k.ctl+"/job?id="+name, &st); err == nil && st != "" && st != string(structs.JobPending) {
				at = time.Now()
				return true
			}
		}
		return false
	})
	return at, err
}

// submitAny applies c on whichever live child leads, retrying while there
// is none.
func submitAny(kids []*child, c state.Command) error {
	body, err := state.Encode(c)
	if err != nil {
		return err
	}
	var last error
	err = until(30*time.Second, func() bool {
		k := leaderOf(kids)
		if k == nil {
			return false
		}
		var rep applyReply
		if last = post(context.Background(), "http://"+k.ctl+"/apply", body, &rep); last != nil {
			return false
		}
		if rep.Retryable {
			return false
		}
		if rep.Err != "" {
			last = errors.New(rep.Err)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("apply %T: %w (last: %v)", c, err, last)
	}
	return last
}

// leaderOf returns the live child that says it leads.
func leaderOf(kids []*child) *child {
	for _, k := range kids {
		if k.cmd == nil {
			continue
		}
		if st, err := k.status(); err == nil && st.Leader == st.ID {
			return k
		}
	}
	return nil
}

var client = &http.Client{Timeout: 2 * time.Second}

func get(url string, out any) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

func getText(url string, out *string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	*out = string(b)
	return err
}

func post(ctx context.Context, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
