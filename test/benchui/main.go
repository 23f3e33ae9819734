// Command benchui measures the web dashboard's server time (make
// bench-ui): the Jobs, Queue, Quotas and Nodes pages rendered by the
// coordinator's handler over a state of 10,000 jobs and 1,000 nodes (made
// by the real state machine and scheduling core), for an admin (who sees
// every job) and for a user (who sees their own and their project's).
// Requests go straight to the handler, so the time is the server's: the
// state read, filtering, sorting, paging and templates. Output is
// key=value lines, the last ui_page_p99_ms (target <= 200).
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/fsm"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/coordinator/ui"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

func main() {
	nodes := flag.Int("nodes", 1000, "nodes")
	jobs := flag.Int("jobs", 10000, "jobs")
	rounds := flag.Int("requests", 100, "requests per page and user")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the requests to this file")
	flag.Parse()

	start := time.Now()
	s := newStore()
	users := build(s, *nodes, *jobs)
	var st struct{ jobs, pending, running, ended, tasks, nodes int }
	s.fsm.Read(func(x *state.State) {
		st.jobs, st.tasks, st.nodes = len(x.Jobs), len(x.Tasks), len(x.Nodes)
		for _, j := range x.Jobs {
			switch {
			case j.State == structs.JobPending:
				st.pending++
			case j.State.Ended():
				st.ended++
			default:
				st.running++
			}
		}
	})
	fmt.Printf("nodes=%d jobs=%d pending=%d placed=%d ended=%d tasks=%d setup_s=%.1f\n",
		st.nodes, st.jobs, st.pending, st.running, st.ended, st.tasks, time.Since(start).Seconds())

	h := ui.New(ui.Config{Store: s, API: api.New(s, api.Config{Tokens: users}), Tokens: users})
	pages := []struct {
		name  string
		paths []string // requests cycle through these
	}{
		{"jobs", []string{"/ui/jobs", "/ui/jobs?sort=-gpus", "/ui/jobs?state=Running&sort=duration", "/ui/jobs?page=40", "/ui/jobs?q=train&sort=name", "/ui/jobs?owner=user-007"}},
		{"queue", []string{"/ui/queue", "/ui/queue?page=5"}},
		{"quotas", []string{"/ui/quotas"}},
		{"nodes", []string{"/ui/nodes", "/ui/nodes?page=6", "/ui/nodes?type=H100", "/ui/nodes?pool=team-3"}},
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	var all []time.Duration
	for _, p := range pages {
		for _, u := range []api.User{users.Users[0], users.Users[1]} {
			var lat []time.Duration
			for i := range *rounds {
				path := p.paths[i%len(p.paths)]
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.AddCookie(&http.Cookie{Name: "atom_session", Value: u.Token})
				rec := httptest.NewRecorder()
				t0 := time.Now()
				h.ServeHTTP(rec, req)
				lat = append(lat, time.Since(t0))
				if rec.Code != http.StatusOK {
					fmt.Fprintf(os.Stderr, "GET %s as %s: %d %s\n", path, u.Name, rec.Code, rec.Body.String())
					os.Exit(1)
				}
			}
			all = append(all, lat...)
			fmt.Printf("page=%s user=%s p50_ms=%.1f p99_ms=%.1f\n", p.name, u.Name, ms(pct(lat, 50)), ms(pct(lat, 99)))
		}
	}
	fmt.Printf("ui_page_p99_ms=%.1f\n", ms(pct(all, 99)))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// store is an api.Store over the real state machine: commands are
// applied as Raft log entries would be.
type store struct {
	fsm   *fsm.FSM
	index uint64
	whys  map[structs.JobID]*sched.Why
}

func newStore() *store { return &store{fsm: fsm.New(), whys: map[structs.JobID]*sched.Why{}} }

func (s *store) Apply(_ context.Context, c state.Command) (any, error) {
	b, err := state.Encode(c)
	if err != nil {
		return nil, err
	}
	s.index++
	r := s.fsm.Apply(&raft.Log{Type: raft.LogCommand, Data: b, Index: s.index}).(fsm.Response)
	return r.Result, r.Err
}

func (s *store) must(c state.Command) any {
	res, err := s.Apply(context.Background(), c)
	if err != nil {
		panic(fmt.Sprintf("apply %T: %v", c, err))
	}
	return res
}

func (s *store) Read(fn func(*state.State))                                { s.fsm.Read(fn) }
func (s *store) Why(id structs.JobID) *sched.Why                           { return s.whys[id] }
func (s *store) Heartbeat(structs.TaskID, string, structs.TaskEvent) error { return nil }

// schedule runs one scheduling cycle as the leader does and commits it.
func (s *store) schedule(now time.Time) {
	var snap *sched.Snapshot
	var pending []*structs.Job
	s.fsm.Read(func(st *state.State) { snap, pending = st.Snapshot(), st.Pending() })
	plan := sched.Schedule(snap, sched.Input{Pending: pending, Now: now, Seed: snap.Index})
	s.whys = plan.Pending
	plan.Pending = nil
	tokens := map[structs.TaskID]string{}
	for i := range plan.Placements {
		pl := &plan.Placements[i]
		for k := range pl.Tasks {
			tp := &pl.Tasks[k]
			tp.ID = structs.NewTaskID(pl.Job, tp.Index, fmt.Sprintf("a%d", snap.Jobs[pl.Job].Attempt))
			tokens[tp.ID] = fmt.Sprintf("token-%s", tp.ID)
		}
	}
	s.must(&state.PlanCommit{Plan: plan, Now: now, Tokens: tokens})
}

// build fills s: two clusters of GPU nodes (A100 and H100, 8 each) and
// CPU nodes, ten project pools, 100 users with quotas; jobs of 1-8 GPUs,
// gangs, CPU jobs and services from all users, scheduled; some tasks
// running, some jobs ended, some accelerators quarantined. The first
// user is an admin; the second, user-001, a member of project team-1.
func build(s *store, nodes, jobs int) api.TokenFile {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var tf api.TokenFile
	tf.Users = append(tf.Users, api.User{Name: "admin", Token: "admin-token-0123456789", Admin: true})
	for i := range 100 {
		name := structs.UserID(fmt.Sprintf("user-%03d", i+1))
		tf.Users = append(tf.Users, api.User{Name: name, Token: fmt.Sprintf("%s-token-0123456789", name)})
		s.must(&state.QuotaSet{Quota: &structs.Quota{Scope: structs.UserScope(name),
			Limits: structs.ResourceList{"gpu/A100": 400, "gpu/H100": 400, structs.KeyCPU: 2_000_000, structs.KeyMemory: 8 << 40}}})
	}
	for _, c := range []structs.ClusterID{"east", "west"} {
		s.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: c, Backend: "local"}})
	}
	for p := range 10 {
		var members []structs.UserID
		for u := range 10 {
			members = append(members, structs.UserID(fmt.Sprintf("user-%03d", p*10+u+1)))
		}
		s.must(&state.PoolUpsert{Pool: &structs.Pool{Name: structs.PoolID(fmt.Sprintf("team-%d", p)), Project: structs.ProjectID(fmt.Sprintf("team-%d", p)),
			Members: members, LendIdle: true}})
	}
	for i := range nodes {
		n := &structs.Node{Name: structs.NodeID(fmt.Sprintf("node-%04d", i)), Cluster: []structs.ClusterID{"east", "west"}[i%2], State: structs.NodeReady,
			Tags: map[string]string{"rack": fmt.Sprintf("r%02d", i/40)}}
		switch {
		case i%5 == 4: // a fifth are CPU nodes
			n.Capacity = structs.Resources{MilliCPU: 64000, Memory: 256 << 30}
		default:
			n.Capacity = structs.Resources{MilliCPU: 96000, Memory: 1 << 40, AccelType: []string{"A100", "H100"}[i%2], Accels: 8}
		}
		if i < 200 && i%5 != 4 {
			n.Pool = structs.PoolID(fmt.Sprintf("team-%d", i%10))
		}
		s.must(&state.NodeUpsert{Node: n})
	}
	kinds := []string{
		`{kind: command, name: %s, command: [train], resources: {accelerators: {type: %s, count: %d}}}`,
		`{kind: command, name: %s, priority: low, command: [eval], resources: {accelerators: {type: %s, count: %d}}}`,
		`{kind: mpi, name: %s, replicas: 2, command: [train], resources: {accelerators: {type: %s, count: %d}}}`,
	}
	for i := range jobs {
		owner := structs.UserID(fmt.Sprintf("user-%03d", rng.IntN(100)+1))
		name := fmt.Sprintf("%s-%05d", []string{"train", "eval", "clean", "serve"}[i%4], i)
		var spec string
		switch r := rng.IntN(10); {
		case r < 2:
			spec = fmt.Sprintf(`{kind: command, name: %s, command: [clean], resources: {cpu: "%d", memory: 8Gi}}`, name, 1+rng.IntN(16))
		case r < 3:
			spec = fmt.Sprintf(`{kind: service, name: %s, replicas: 2, command: [serve], resources: {cpu: "2", memory: 4Gi}}`, name)
		default:
			spec = fmt.Sprintf(kinds[rng.IntN(len(kinds))], name, []string{"A100", "H100"}[rng.IntN(2)], []int64{1, 1, 2, 4, 8}[rng.IntN(5)])
		}
		js, err := structs.ParseJobSpec([]byte(spec))
		if err != nil {
			panic(err)
		}
		j, err := js.ToJob(owner)
		if err != nil {
			panic(err)
		}
		j.ID = structs.JobID(name)
		s.must(&state.JobSubmit{Job: j, Now: t0.Add(time.Duration(i) * 100 * time.Millisecond)})
	}
	now := t0.Add(time.Duration(jobs) * 100 * time.Millisecond) // within every job's pending timeout
	s.schedule(now)
	// Most tasks start; some jobs end (succeeded, cancelled); a few
	// accelerators fail their check.
	var events []structs.TaskEvent
	var cancel []structs.JobID
	s.fsm.Read(func(st *state.State) {
		for _, id := range slices.Sorted(maps.Keys(st.Tasks)) {
			if rng.IntN(10) < 8 {
				events = append(events, structs.TaskEvent{Task: id, State: structs.TaskRunning, Time: now})
			}
		}
		for _, id := range slices.Sorted(maps.Keys(st.Jobs)) {
			if st.Jobs[id].State == structs.JobPending && rng.IntN(4) == 0 {
				cancel = append(cancel, id)
			}
		}
	})
	s.must(&state.TaskUpdate{Events: events})
	var ends []structs.TaskEvent
	for i, e := range events {
		switch i % 7 {
		case 0:
			ends = append(ends, structs.TaskEvent{Task: e.Task, State: structs.TaskSucceeded, Time: now.Add(5 * time.Minute)})
		case 3:
			if i%21 == 3 {
				ends = append(ends, structs.TaskEvent{Task: e.Task, State: structs.TaskFailed, ExitCode: 1, Message: "preflight: ECC errors",
					Reason: structs.ReasonPreflightFailed, Accelerators: []int{0}, Time: now.Add(5 * time.Minute)})
			}
		}
	}
	s.must(&state.TaskUpdate{Events: ends})
	for _, id := range cancel {
		s.must(&state.JobCancel{ID: id, Now: now.Add(5 * time.Minute)})
	}
	s.schedule(now.Add(5 * time.Minute))
	return tf
}
