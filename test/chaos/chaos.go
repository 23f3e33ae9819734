// Package chaos is atom's fault and load suite (`make chaos`):
// three `coordinator server` processes and the local backend, four
// clients submitting a mix of gangs, services, batch and low-priority jobs
// (with retries under the same request ID, replies lost on purpose,
// cancels and scales), while the suite kills the leader with SIGKILL and
// restarts it, pauses a follower with SIGSTOP, kills atom processes and
// cuts a server off the others' Raft traffic. Afterwards it checks every
// promise and reports them as key=value lines:
//
//	start ─▶ chaos (Options.Duration) ─▶ repair ─▶ settle ─▶ check via the API
//	      ─▶ cancel what runs, stop the servers ─▶ replay each server's log
//	         offline through the state machine, invariants at every index
//
// Run is the whole suite; cmd/chaos is `make chaos`, and the package test
// runs a short version in `make test`.
package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// Options configure a run. Zero values take the defaults.
type Options struct {
	// Bin holds the coordinator and atom binaries. Required.
	Bin string
	// Work is the directory for data dirs, logs and specs; a new
	// temporary one when empty (kept: its path is in the report).
	Work string
	// Duration is how long faults and load go on (default 3 minutes).
	Duration time.Duration
	// Seed makes the workload and the faults' choices repeatable (the
	// timing of a real cluster is not); 0 picks one.
	Seed uint64
	// Clients is the number of concurrent clients (default 4).
	Clients int
	// HeartbeatTTL and Cycle are the servers' flags (default 3 s, 100 ms).
	HeartbeatTTL, Cycle time.Duration
	// Log receives progress and the fault log; nil discards it.
	Log io.Writer
}

// Report is what a run found. OK says whether every promise held.
type Report struct {
	Work     string
	Seed     uint64
	Duration time.Duration

	SubmissionsAcked   int // a reply named the job
	AckedByRetry       int // ... and that reply answered a retry that found the job the first try made
	SubmissionsRefused int // over quota: no job
	SubmissionsUnknown int // no answer before the client gave up
	UnknownCommitted   int // ... of which the job exists all the same
	LostReplies        int // attempts cut short on purpose, their outcome unknown to the client
	Retries            int
	Cancels, Scales    int

	JobsLost           int // acknowledged, yet not in the state
	JobsDuplicated     int // one submission, several jobs
	CancelsLost        int // a cancel answered 200, yet the job is not Cancelled
	ScalesLost         int // a service's replicas are not what its last answered scale set
	Services           int // services not cancelled
	ServicesAtReplicas int
	JobsStuck          int // not a service, not ended when the cluster had settled

	InvariantViolations int
	IndexesChecked      int // command entries replayed and checked, all servers
	UsageChecked        int // of them, those whose fair-share usage was recomputed from every task
	LogEntries          uint64
	ServersIdentical    bool

	Failovers       int // a new leader after the leader was killed or cut off
	NoFailover      int // no new leader within failoverWait
	MaxFailover     time.Duration
	MaxLeaderless   time.Duration
	LeaderChanges   int
	LeaderKills     int
	LeaderCuts      int
	FollowerPauses  int
	ServerCuts      int
	AtomKills       int
	TasksDoubled    int // a task with two live atom processes
	HealthyLost     int // tasks declared Lost after they ran, whose atom the suite never killed
	LostUnstarted   int // tasks declared Lost before they ran (placed by a leader that went), placed again
	OrphanProcesses int // atom processes of ended tasks after the cluster settled
	Settled         bool

	Problems []string // what broke, one line each
}

// OK reports whether every promise held.
func (r *Report) OK() bool { return len(r.Failures()) == 0 }

// Failures names the promises that broke.
func (r *Report) Failures() []string {
	var out []string
	add := func(bad bool, format string, a ...any) {
		if bad {
			out = append(out, fmt.Sprintf(format, a...))
		}
	}
	add(r.SubmissionsAcked == 0, "no submission was acknowledged")
	add(r.JobsLost > 0, "jobs_lost=%d", r.JobsLost)
	add(r.JobsDuplicated > 0, "jobs_duplicated=%d", r.JobsDuplicated)
	add(r.CancelsLost > 0, "cancels_lost=%d", r.CancelsLost)
	add(r.ScalesLost > 0, "scales_lost=%d", r.ScalesLost)
	add(r.ServicesAtReplicas != r.Services, "services_at_replicas=%d/%d", r.ServicesAtReplicas, r.Services)
	add(r.InvariantViolations > 0, "invariant_violations=%d", r.InvariantViolations)
	add(r.IndexesChecked == 0, "no log index was checked")
	add(!r.ServersIdentical, "servers_identical=false")
	add(r.NoFailover > 0, "%d failovers found no new leader within %s", r.NoFailover, failoverWait)
	add(r.TasksDoubled > 0, "tasks_doubled=%d", r.TasksDoubled)
	add(r.HealthyLost > 0, "healthy_tasks_lost=%d", r.HealthyLost)
	add(r.OrphanProcesses > 0, "orphan_processes=%d", r.OrphanProcesses)
	add(r.JobsStuck > 0, "jobs_stuck=%d", r.JobsStuck)
	for _, p := range r.Problems {
		out = append(out, p)
	}
	return out
}

// Lines are the report as key=value lines, the figures first.
func (r *Report) Lines() []string {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	l := []string{
		fmt.Sprintf("duration=%s", r.Duration.Round(time.Second)),
		fmt.Sprintf("seed=%d", r.Seed),
		fmt.Sprintf("submissions_acked=%d", r.SubmissionsAcked),
		fmt.Sprintf("acked_by_retry=%d", r.AckedByRetry),
		fmt.Sprintf("submissions_refused_quota=%d", r.SubmissionsRefused),
		fmt.Sprintf("submissions_unanswered=%d", r.SubmissionsUnknown),
		fmt.Sprintf("lost_replies=%d", r.LostReplies),
		fmt.Sprintf("client_retries=%d", r.Retries),
		fmt.Sprintf("cancels=%d", r.Cancels),
		fmt.Sprintf("scales=%d", r.Scales),
		fmt.Sprintf("jobs_lost=%d", r.JobsLost),
		fmt.Sprintf("jobs_duplicated=%d", r.JobsDuplicated),
		fmt.Sprintf("cancels_lost=%d", r.CancelsLost),
		fmt.Sprintf("scales_lost=%d", r.ScalesLost),
		fmt.Sprintf("jobs_stuck=%d", r.JobsStuck),
		fmt.Sprintf("invariant_violations=%d", r.InvariantViolations),
		fmt.Sprintf("indexes_checked=%d", r.IndexesChecked),
		fmt.Sprintf("usage_checked=%d", r.UsageChecked),
		fmt.Sprintf("log_entries=%d", r.LogEntries),
		fmt.Sprintf("services_at_replicas=%d/%d", r.ServicesAtReplicas, r.Services),
		fmt.Sprintf("servers_identical=%v", r.ServersIdentical),
		fmt.Sprintf("failovers=%d", r.Failovers),
		fmt.Sprintf("failovers_failed=%d", r.NoFailover),
		fmt.Sprintf("max_failover_ms=%d", ms(r.MaxFailover)),
		fmt.Sprintf("max_leaderless_ms=%d", ms(r.MaxLeaderless)),
		fmt.Sprintf("leader_changes=%d", r.LeaderChanges),
		fmt.Sprintf("leader_kills=%d", r.LeaderKills),
		fmt.Sprintf("leader_cuts=%d", r.LeaderCuts),
		fmt.Sprintf("server_cuts=%d", r.ServerCuts),
		fmt.Sprintf("follower_pauses=%d", r.FollowerPauses),
		fmt.Sprintf("atom_kills=%d", r.AtomKills),
		fmt.Sprintf("tasks_doubled=%d", r.TasksDoubled),
		fmt.Sprintf("healthy_tasks_lost=%d", r.HealthyLost),
		fmt.Sprintf("tasks_lost_unstarted=%d", r.LostUnstarted),
		fmt.Sprintf("orphan_processes=%d", r.OrphanProcesses),
		fmt.Sprintf("settled=%v", r.Settled),
		fmt.Sprintf("ok=%v", r.OK()),
	}
	return l
}

// clusterYAML is the local cluster: three public 4×A100 nodes, two CPU
// nodes and a project pool that lends its idle A100 node to low jobs.
// Each user's quota is a little over a quarter of the public pool, so
// clients compete and some submissions are refused.
const clusterYAML = `clusters:
  - {name: local, backend: local}
pools:
  - {name: perception, project: perception, members: [%[1]s], lendIdle: true}
nodes:
  - {name: a100-1, cpu: "32", memory: 256Gi, accelerators: {type: A100, count: 4}}
  - {name: a100-2, cpu: "32", memory: 256Gi, accelerators: {type: A100, count: 4}}
  - {name: a100-3, cpu: "32", memory: 256Gi, accelerators: {type: A100, count: 4}}
  - {name: cpu-1, cpu: "8", memory: 32Gi}
  - {name: cpu-2, cpu: "8", memory: 32Gi}
  - {name: perception-a100-1, pool: perception, cpu: "32", memory: 256Gi, accelerators: {type: A100, count: 4}}
quotas:
%[2]s  - {scope: "project:perception", limits: {gpu/A100: 4, cpu: "4", memory: 16Gi}}
`

const clusterNodes = 6

// Run runs the suite. An error means the suite itself could not run (a
// server did not start); broken promises are in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Bin == "" {
		return nil, fmt.Errorf("chaos: Options.Bin is required")
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Minute
	}
	if o.Clients <= 0 {
		o.Clients = 4
	}
	if o.HeartbeatTTL <= 0 {
		o.HeartbeatTTL = 3 * time.Second
	}
	if o.Cycle <= 0 {
		o.Cycle = 100 * time.Millisecond
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64() % 1_000_000
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	bin, err := filepath.Abs(o.Bin)
	if err != nil {
		return nil, err
	}
	if o.Work == "" {
		if o.Work, err = os.MkdirTemp("", "atom-chaos-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(o.Work, 0o755); err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	start := time.Now()
	var logMu sync.Mutex
	logf := func(format string, a ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(o.Log, "%6.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	rep := &Report{Work: o.Work, Seed: o.Seed, Duration: o.Duration}
	runID := fmt.Sprintf("%d-%s", o.Seed, randomHex(4))

	var users, quotas []string
	for i := 1; i <= o.Clients; i++ {
		u := fmt.Sprintf("u%d", i)
		users = append(users, u)
		quotas = append(quotas, fmt.Sprintf("  - {scope: \"user:%s\", limits: {cpu: \"6\", memory: 24Gi, gpu/A100: 5}}\n", u))
	}
	cy := fmt.Sprintf(clusterYAML, strings.Join(users, ", "), strings.Join(quotas, ""))
	logf("work dir %s, seed %d, %s of faults and load", o.Work, o.Seed, o.Duration)
	c, err := startCluster(bin, o.Work, users, cy, o.HeartbeatTTL, o.Cycle)
	if err != nil {
		return nil, err
	}
	atomBin := filepath.Join(bin, "atom")
	defer func() {
		c.stop()
		killAll(runID, atomBin)
	}()
	admin := func(s *server) *client.Client {
		a := client.New(s.url, c.admin)
		a.Retries = 0
		a.HTTP = c.hc
		return a
	}
	// Every server has the cluster.
	if err := waitUntil(ctx, 60*time.Second, func() bool {
		for _, s := range c.servers {
			n, err := admin(s).Nodes(ctx)
			if err != nil || len(n) != clusterNodes {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, fmt.Errorf("the cluster did not form: %w (logs in %s)", err, o.Work)
	}
	logf("three servers up; leader %s", leaderID(c.leader(ctx)))

	// Chaos.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	w := newWatcher(c, 50*time.Millisecond)
	wl := &workload{c: c, run: runID, dir: o.Work, seed: o.Seed}
	fl := &faults{c: c, w: w, rng: rand.New(rand.NewPCG(o.Seed, 99)), run: runID, logf: logf,
		killedTasks: map[string]bool{}, doubledTasks: map[string]bool{}}
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); w.run(wctx) }()
	go func() { defer bg.Done(); fl.watchProcs(wctx, 300*time.Millisecond) }()

	stop := make(chan struct{})
	cctx, ccancel := context.WithTimeout(ctx, o.Duration+opDeadline+30*time.Second)
	defer ccancel()
	var clients, faulting sync.WaitGroup
	for i := 1; i <= o.Clients; i++ {
		cl := wl.newClient(i)
		clients.Add(1)
		go func() { defer clients.Done(); cl.loop(cctx, stop) }()
	}
	faulting.Add(1)
	go func() { defer faulting.Done(); fl.loop(cctx, stop) }()
	select {
	case <-ctx.Done():
	case <-time.After(o.Duration):
	}
	close(stop)
	faulting.Wait()
	fl.repair()
	logf("faults stopped; servers repaired; waiting for the clients' last operations")
	clients.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	// Settle, then check through the API.
	logf("settling")
	v := settle(ctx, c, admin, 30*time.Second+6*o.HeartbeatTTL, 5*time.Minute, runID, atomBin, logf)
	rep.Settled = v.settled
	if l := c.waitLeader(ctx, 10*time.Second); l != nil {
		if err := allTasks(ctx, admin(l), v); err != nil {
			rep.Problems = append(rep.Problems, "read the tasks: "+err.Error())
		}
	}
	checkJobs(rep, wl, v, fl)
	wcancel()
	bg.Wait()
	rep.MaxLeaderless, _, rep.LeaderChanges = w.result()
	fl.mu.Lock()
	rep.Failovers, rep.NoFailover, rep.MaxFailover = fl.failovers, fl.noFailover, fl.maxFailover
	rep.LeaderKills, rep.LeaderCuts, rep.FollowerPauses = fl.leaderKills, fl.leaderCuts, fl.pauses
	rep.ServerCuts, rep.AtomKills, rep.TasksDoubled = fl.cuts, fl.atomKills, len(fl.doubledTasks)
	for _, t := range sortedKeys(fl.doubledTasks) {
		rep.Problems = append(rep.Problems, "task "+t+" ran twice at once")
	}
	fl.mu.Unlock()

	// Stop: cancel what still runs, let atom stop it, stop the servers.
	logf("cancelling what runs and stopping the servers")
	shutdown(ctx, c, admin, v, runID, atomBin)
	if n := killAll(runID, atomBin); n > 0 {
		logf("killed %d processes left behind (children of killed atoms)", n)
	}

	// Replay every server's log offline.
	logf("replaying each server's Raft log through the state machine")
	replayAll(rep, c)
	logf("done in %s", time.Since(start).Round(time.Second))
	return rep, nil
}

func leaderID(s *server) string {
	if s == nil {
		return "(none)"
	}
	return s.id
}

// waitUntil polls cond every 200 ms for up to d.
func waitUntil(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// view is the cluster's state as the API shows it once it has settled.
type view struct {
	settled   bool
	identical bool                           // every server listed the same jobs
	jobs      map[structs.JobID]*structs.Job // the leader's
	tasks     map[structs.JobID][]*structs.Task
	orphans   int      // atom processes of tasks that no longer hold resources
	waiting   []string // what had not settled, when it did not
}

// settle waits until the servers list the same jobs, every service runs
// its replicas, every other job has ended and no atom runs for an ended
// task. Jobs that waited during the chaos (low ones behind normal ones)
// take a while to drain, so it waits as long as the cluster makes
// progress: it gives up when nothing has changed for idle, or after
// limit. It returns the last view either way.
func settle(ctx context.Context, c *cluster, admin func(*server) *client.Client, idle, limit time.Duration, run, atomBin string, logf func(string, ...any)) *view {
	var v *view
	start, changed := time.Now(), time.Now()
	var last string
	for {
		v = look(ctx, c, admin, run, atomBin)
		if v.settled {
			logf("settled: %d jobs, the servers agree", len(v.jobs))
			return v
		}
		if s := strings.Join(v.waiting, "; "); s != last {
			logf("  waiting: %s", s)
			last, changed = s, time.Now()
		}
		if time.Since(changed) > idle || time.Since(start) > limit || ctx.Err() != nil {
			logf("did not settle (%s without progress, %s in all): %s", time.Since(changed).Round(time.Second), time.Since(start).Round(time.Second), last)
			return v
		}
		time.Sleep(time.Second)
	}
}

func look(ctx context.Context, c *cluster, admin func(*server) *client.Client, run, atomBin string) *view {
	v := &view{jobs: map[structs.JobID]*structs.Job{}, tasks: map[structs.JobID][]*structs.Task{}}
	l := c.leader(ctx)
	if l == nil {
		v.waiting = append(v.waiting, "no leader")
		return v
	}
	var lists [][]byte
	for _, s := range c.servers {
		jobs, err := admin(s).ListJobs(ctx, client.JobFilter{})
		if err != nil {
			v.waiting = append(v.waiting, fmt.Sprintf("%s: %v", s.id, err))
			return v
		}
		b, _ := json.Marshal(jobs)
		lists = append(lists, b)
		if s == l {
			for _, j := range jobs {
				v.jobs[j.ID] = j
			}
		}
	}
	v.identical = string(lists[0]) == string(lists[1]) && string(lists[1]) == string(lists[2])
	if !v.identical {
		v.waiting = append(v.waiting, "the servers list different jobs")
	}
	short, live, busy := 0, map[string]bool{}, 0
	for _, id := range slices.Sorted(maps.Keys(v.jobs)) {
		j := v.jobs[id]
		if j.State.Ended() {
			continue
		}
		st, err := admin(l).Job(ctx, id)
		if err != nil {
			v.waiting = append(v.waiting, fmt.Sprintf("job %s: %v", id, err))
			return v
		}
		v.tasks[id] = st.Tasks
		for _, t := range st.Tasks {
			if t.State.HoldsResources() {
				live[string(t.ID)] = true
			}
		}
		if j.Kind != structs.KindService {
			busy++
			continue
		}
		if running(st.Job, st.Tasks) != st.Job.ShapeAt(st.Job.Shape).Replicas {
			short++
		}
	}
	if short > 0 {
		v.waiting = append(v.waiting, fmt.Sprintf("%d services short of replicas", short))
	}
	if busy > 0 {
		v.waiting = append(v.waiting, fmt.Sprintf("%d jobs not ended", busy))
	}
	for _, p := range taskProcs(run, atomBin) {
		if p.atom && !live[p.task] {
			v.orphans++
		}
	}
	if v.orphans > 0 {
		v.waiting = append(v.waiting, fmt.Sprintf("%d atom processes of ended tasks", v.orphans))
	}
	v.settled = len(v.waiting) == 0
	return v
}

// running counts the tasks of j's current attempt that run.
func running(j *structs.Job, tasks []*structs.Task) int {
	n := 0
	for _, t := range tasks {
		if t.Attempt == j.Attempt && t.State == structs.TaskRunning {
			n++
		}
	}
	return n
}

// checkJobs compares what the clients were told with the settled state.
func checkJobs(rep *Report, wl *workload, v *view, fl *faults) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	rep.LostReplies, rep.Retries, rep.Cancels, rep.Scales = wl.lostReplies, wl.retries, wl.cancels, wl.scales
	rep.Problems = append(rep.Problems, wl.problems...)
	rep.ServersIdentical = v.identical // the replay confirms it (or not)
	rep.OrphanProcesses = v.orphans
	byName := map[string][]*structs.Job{}
	for _, j := range v.jobs {
		byName[j.Name] = append(byName[j.Name], j)
	}
	for name, js := range byName {
		if len(js) > 1 {
			rep.JobsDuplicated += len(js) - 1
			rep.Problems = append(rep.Problems, fmt.Sprintf("submission %s made %d jobs", name, len(js)))
		}
	}
	for _, t := range wl.jobs {
		t.mu.Lock()
		switch {
		case t.acked:
			rep.SubmissionsAcked++
			if t.existing {
				rep.AckedByRetry++
			}
			j := v.jobs[t.id]
			switch {
			case j == nil:
				rep.JobsLost++
				rep.Problems = append(rep.Problems, fmt.Sprintf("job %s (%s) was acknowledged and is gone", t.id, t.name))
			case j.Name != t.name:
				rep.JobsLost++
				rep.Problems = append(rep.Problems, fmt.Sprintf("request %s was answered with job %s, which is %s", t.req, t.id, j.Name))
			case t.cancelAcked && j.State != structs.JobCancelled:
				rep.CancelsLost++
				rep.Problems = append(rep.Problems, fmt.Sprintf("job %s was cancelled and is %s", t.id, j.State))
			case t.cancelEnded && !j.State.Ended():
				rep.CancelsLost++
				rep.Problems = append(rep.Problems, fmt.Sprintf("job %s: cancel said it had ended; it is %s", t.id, j.State))
			case t.kind == kindService && !t.cancelAcked && !t.cancelEnded && !t.cancelUnknown:
				rep.Services++
				if j.State.Ended() {
					rep.Problems = append(rep.Problems, fmt.Sprintf("service %s ended (%s: %s) without being cancelled", t.id, j.State, j.Reason))
					break
				}
				if !t.scaleUnknown && j.Replicas != t.replicas {
					rep.ScalesLost++
					rep.Problems = append(rep.Problems, fmt.Sprintf("service %s has %d replicas; its last scale set %d", t.id, j.Replicas, t.replicas))
				}
				if running(j, v.tasks[j.ID]) == j.ShapeAt(j.Shape).Replicas {
					rep.ServicesAtReplicas++
				}
			case t.kind != kindService && !j.State.Ended():
				rep.JobsStuck++
				rep.Problems = append(rep.Problems, fmt.Sprintf("job %s (%s) is still %s: %s", t.id, t.name, j.State, j.Reason))
			}
		case t.refused:
			rep.SubmissionsRefused++
		case t.unknown:
			rep.SubmissionsUnknown++
			if len(byName[t.name]) > 0 {
				rep.UnknownCommitted++
			}
		}
		t.mu.Unlock()
	}
	// Tasks declared Lost whose atom the suite never killed.
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for _, ts := range v.tasks {
		for _, t := range ts {
			if t.State == structs.TaskLost && t.StartedAt.IsZero() {
				rep.LostUnstarted++
			}
			// A task being stopped (preempted, cancelled, scaled down) may
			// end Lost: its end was wanted.
			if t.State == structs.TaskLost && !fl.killedTasks[string(t.ID)] && !t.StartedAt.IsZero() && t.StopReason == "" {
				rep.HealthyLost++
				rep.Problems = append(rep.Problems, fmt.Sprintf("task %s was declared lost, yet nothing killed its atom", t.ID))
			}
		}
	}
}

// allTasks fetches the tasks of every job in v from s (a settled view
// holds those of live jobs only).
func allTasks(ctx context.Context, a *client.Client, v *view) error {
	for _, id := range slices.Sorted(maps.Keys(v.jobs)) {
		if v.tasks[id] != nil {
			continue
		}
		var err error
		for range 5 {
			var st *wire.JobStatus
			if st, err = a.Job(ctx, id); err == nil {
				v.tasks[id] = st.Tasks
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
	}
	return nil
}

// shutdown cancels every job that has not ended, waits (briefly) for
// their atoms to stop them, and stops the servers with SIGTERM.
func shutdown(ctx context.Context, c *cluster, admin func(*server) *client.Client, v *view, run, atomBin string) {
	if l := c.waitLeader(ctx, 10*time.Second); l != nil {
		for id, j := range v.jobs {
			if !j.State.Ended() {
				for range 5 {
					if _, err := admin(l).CancelJob(ctx, id); err == nil || !retryable(err) {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
		}
		_ = waitUntil(ctx, 30*time.Second, func() bool {
			for _, p := range taskProcs(run, atomBin) {
				if p.atom {
					return false
				}
			}
			return true
		})
	}
	var wg sync.WaitGroup
	for _, s := range c.servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.terminate(20 * time.Second) }()
	}
	wg.Wait()
	c.net.close()
}

// replayAll replays each server's log and compares them.
func replayAll(rep *Report, c *cluster) {
	common := uint64(0)
	for i, s := range c.servers {
		last, err := lastIndex(s.dataDir)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("read %s's log: %v", s.id, err))
			rep.ServersIdentical = false
			return
		}
		if i == 0 || last < common {
			common = last
		}
		rep.LogEntries = max(rep.LogEntries, last)
	}
	var rs []*replayed
	for _, s := range c.servers {
		r, err := replayDir(s.id, s.dataDir, common)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("replay %s's log: %v", s.id, err))
			rep.ServersIdentical = false
			continue
		}
		rs = append(rs, r)
		rep.IndexesChecked += r.commands
		rep.UsageChecked += r.usageChecked
		rep.InvariantViolations += r.violations
		rep.Problems = append(rep.Problems, r.examples...)
	}
	if len(rs) != len(c.servers) {
		return
	}
	if diffs := compareLogs(rs, common); len(diffs) > 0 {
		rep.ServersIdentical = false
		rep.Problems = append(rep.Problems, diffs...)
	}
}
