// Command benchraft measures the Raft-replicated coordinator:
// three servers on loopback TCP, each with its own bolt log and snapshots.
//
//  1. throughput: jobs are submitted in bulk with scheduling paused, then
//     the leader's loop places them; placements committed per second,
//     from resuming to the last placement applied on the leader;
//  2. latency: JobSubmits offered open-loop at -rate per second for
//     -duration, timed from the Apply call to the command applied on the
//     leader (the scheduling loop keeps running meanwhile);
//     the disk's own latency is measured around it: as many 4 KiB writes,
//     each fdatasynced, on the servers' filesystem, half before and half
//     after, give fsync_p99_ms and commit_p99_vs_fsync (target <= 3), and
//     as many 1 KiB appends to a raft-boltdb store there give
//     bolt_append_p99_ms (a commit is the leader's append, then a
//     follower's); before it, -alone JobSubmits one at a time on an idle
//     cluster give what a commit takes with nothing else to do
//     (commit_alone_p99_vs_fsync);
//  3. failover: the servers run as child processes; the leader is killed
//     with SIGKILL, and the time until a new leader has committed a
//     placement for a job submitted after the kill is measured.
//
// Output is key=value lines; the last are commits_placements_per_sec,
// p99_submit_to_commit_ms, fsync_p99_ms, commit_p99_vs_fsync and
// failover_ms, each target with whether it was met; the first and the
// last but those say the machine's load averages. Clients retry with the
// same command while leadership moves, as real ones do. BENCHRAFT_LOG=info
// shows the servers' logs (-cpuprofile profiles runs 1 and 2).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/loadavg"
)

var (
	flagJobs       = flag.Int("jobs", 20000, "jobs submitted in bulk for the throughput run")
	flagNodes      = flag.Int("nodes", 1000, "CPU nodes (64 cores) in the throughput and latency runs")
	flagSubmitters = flag.Int("submitters", 64, "concurrent clients for bulk submission")
	flagRate       = flag.Int("rate", 1000, "submissions per second offered in the latency run")
	flagDuration   = flag.Duration("duration", 5*time.Second, "length of the latency run")
	flagRounds     = flag.Int("rounds", 3, "leader kills in the failover run (the median is reported)")
	flagCPUProfile = flag.String("cpuprofile", "", "write a CPU profile of the in-process runs to this file")
	flagAlone      = flag.Int("alone", 1000, "JobSubmits made one at a time, before the latency run, on an idle cluster")
	flagPauseLat   = flag.Bool("pause-latency", false, "pause scheduling during the latency run")
	flagSkip       = flag.String("skip", "", "runs to skip: throughput, latency, failover")
	flagLease      = flag.Duration("lease", 0, "leader lease timeout (server default when 0)")
	flagHB         = flag.Duration("heartbeat", 0, "raft heartbeat and election timeout (server default when 0)")
	flagChild      = flag.Bool("child", false, "internal: run one server as a child process")
)

func main() {
	flag.Parse()
	if *flagChild {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchraft:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "benchraft-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("loadavg_before=%s\n", loadavg.String())
	if *flagCPUProfile != "" {
		f, err := os.Create(*flagCPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	var perSec, p99, alone, fsyncP99, fo float64
	if !skip("throughput") {
		if perSec, err = throughput(dir + "/throughput"); err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
	}
	// Let the disk settle: the throughput run leaves large files behind
	// whose writeback would compete with the latency run's fsyncs.
	_ = os.RemoveAll(dir + "/throughput")
	syscall.Sync()
	if !skip("latency") {
		// The disk's own p99: 4 KiB writes each fdatasynced, on the
		// servers' filesystem, half just before the latency run and half
		// just after, as many as it submits.
		n := int(float64(*flagRate) * flagDuration.Seconds())
		var fsyncs, bolts [2][]time.Duration
		probe := func(half, count int) error {
			var err error
			if fsyncs[half], err = fsyncLatencies(dir, count); err != nil {
				return fmt.Errorf("fsync probe: %w", err)
			}
			if bolts[half], err = boltAppends(dir, count); err != nil {
				return fmt.Errorf("bolt probe: %w", err)
			}
			return nil
		}
		if err := probe(0, n/2); err != nil {
			return err
		}
		if alone, err = commitAlone(dir + "/alone"); err != nil {
			return fmt.Errorf("commits alone: %w", err)
		}
		_ = os.RemoveAll(dir + "/alone")
		if p99, err = latency(dir + "/latency"); err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		if err := probe(1, n-n/2); err != nil {
			return err
		}
		all := slices.Concat(fsyncs[:]...)
		fsyncP99 = ms(pct(all, 99))
		fmt.Printf("fsync_writes=%d fsync_p50_ms=%.2f fsync_p90_ms=%.2f fsync_max_ms=%.2f fsync_p99_before_ms=%.2f fsync_p99_after_ms=%.2f\n",
			len(all), ms(pct(all, 50)), ms(pct(all, 90)), ms(pct(all, 100)), ms(pct(fsyncs[0], 99)), ms(pct(fsyncs[1], 99)))
		b := slices.Concat(bolts[:]...)
		fmt.Printf("bolt_appends=%d bolt_append_p50_ms=%.2f bolt_append_p90_ms=%.2f bolt_append_p99_ms=%.2f commit_p99_vs_bolt_append=%.2f\n",
			len(b), ms(pct(b, 50)), ms(pct(b, 90)), ms(pct(b, 99)), p99/ms(pct(b, 99)))
	}
	_ = os.RemoveAll(dir + "/latency")
	syscall.Sync()
	if !skip("failover") {
		if fo, err = failover(dir + "/failover"); err != nil {
			return fmt.Errorf("failover: %w", err)
		}
	}
	fmt.Printf("loadavg_after=%s\n", loadavg.String())
	if !skip("throughput") {
		fmt.Printf("%-40s # target >= 20,000: %s\n", fmt.Sprintf("commits_placements_per_sec=%.0f", perSec), met(perSec >= 20000))
	}
	if !skip("latency") {
		fmt.Printf("p99_submit_to_commit_ms=%.2f\n", p99)
		fmt.Printf("fsync_p99_ms=%.2f\n", fsyncP99)
		fmt.Printf("%-40s # target <= 3: %s\n", fmt.Sprintf("commit_p99_vs_fsync=%.2f", p99/fsyncP99), met(p99 <= 3*fsyncP99))
		fmt.Printf("commit_alone_p99_vs_fsync=%.2f\n", alone/fsyncP99)
	}
	if !skip("failover") {
		fmt.Printf("%-40s # target <= 1,500: %s\n", fmt.Sprintf("failover_ms=%.0f", fo), met(fo <= 1500))
	}
	return nil
}

func skip(run string) bool { return slices.Contains(strings.Split(*flagSkip, ","), run) }

// logger keeps the servers quiet but for errors.
func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
}

// startCluster starts n in-process servers and waits for them to form.
func startCluster(dir string, n int) ([]*server.Server, error) {
	var srv []*server.Server
	for i := range n {
		cfg := server.Config{
			ID: fmt.Sprintf("s%d", i), RaftAddr: "127.0.0.1:0", DataDir: fmt.Sprintf("%s/s%d", dir, i),
			Bootstrap: i == 0, HeartbeatTTL: time.Hour, Logger: logger(),
			LeaderLeaseTimeout: *flagLease, HeartbeatTimeout: *flagHB, ElectionTimeout: *flagHB,
		}
		s, err := server.New(cfg)
		if err != nil {
			shutdown(srv)
			return nil, err
		}
		srv = append(srv, s)
		if i == 0 {
			if err := until(10*time.Second, s.IsLeader); err != nil {
				shutdown(srv)
				return nil, fmt.Errorf("bootstrap: %w", err)
			}
			continue
		}
		if err := srv[0].AddVoter(cfg.ID, s.RaftAddr()); err != nil {
			shutdown(srv)
			return nil, err
		}
	}
	err := until(10*time.Second, func() bool {
		for _, s := range srv {
			if id, _ := s.Leader(); id == "" {
				return false
			}
		}
		return true
	})
	return srv, err
}

// seededCluster starts three servers with -nodes nodes, scheduling paused
// or not.
func seededCluster(dir string, paused bool) ([]*server.Server, error) {
	srv, err := startCluster(dir, 3)
	if err != nil {
		return nil, err
	}
	if err := seed(srv, *flagNodes); err != nil {
		shutdown(srv)
		return nil, err
	}
	for _, s := range srv {
		s.PauseScheduling(paused)
	}
	return srv, nil
}

func shutdown(srv []*server.Server) {
	for _, s := range srv {
		_ = s.Shutdown()
	}
}

// until polls cond every millisecond until it holds or d passes.
func until(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// seed adds CPU nodes and ample quota for the owners u0..u49.
func seed(srv []*server.Server, nodes int) error {
	for i := range nodes {
		if _, _, err := apply(srv, &state.NodeUpsert{Node: schedtest.C64(fmt.Sprintf("node-%05d", i))}); err != nil {
			return err
		}
	}
	for u := range 50 {
		q := &structs.Quota{Scope: structs.UserScope(owner(u)), Limits: structs.ResourceList{"cpu": 1 << 50, "memory": 1 << 60}}
		if _, _, err := apply(srv, &state.QuotaSet{Quota: q}); err != nil {
			return err
		}
	}
	return nil
}

func owner(i int) structs.UserID { return structs.UserID(fmt.Sprintf("u%d", i%50)) }

// job is the i-th benchmark job: one replica of 1 core and 1 GiB, with a
// unique ID and name.
func job(prefix string, i int) *structs.Job {
	j := schedtest.NewJob(fmt.Sprintf("%s-%d", prefix, i), string(owner(i))).CPU(1, 1).Obj()
	return j
}

// throughput submits -jobs with scheduling paused, then resumes it and
// times the leader committing their placements.
func throughput(dir string) (float64, error) {
	srv, err := seededCluster(dir, true)
	if err != nil {
		return 0, err
	}
	defer shutdown(srv)

	// 1. Bulk submission (also timed: JobSubmit admission builds a world
	// over the whole state on every apply).
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, *flagSubmitters)
	lat := make([][]time.Duration, *flagSubmitters)
	start := time.Now()
	for g := range *flagSubmitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= *flagJobs {
					return
				}
				t := time.Now()
				if _, _, err := apply(srv, &state.JobSubmit{RequestID: fmt.Sprint(i), Job: job("bulk", i), Now: time.Now()}); err != nil {
					errs <- err
					return
				}
				lat[g] = append(lat[g], time.Since(t))
			}
		}()
	}
	wg.Wait()
	submitWall := time.Since(start)
	select {
	case err := <-errs:
		return 0, fmt.Errorf("submit: %w", err)
	default:
	}
	all := slices.Concat(lat...)
	fmt.Printf("throughput_nodes=%d throughput_jobs=%d\n", *flagNodes, *flagJobs)
	fmt.Printf("bulk_submit_per_sec=%.0f bulk_submit_p50_ms=%.2f bulk_submit_p99_ms=%.2f\n",
		float64(*flagJobs)/submitWall.Seconds(), ms(pct(all, 50)), ms(pct(all, 99)))

	l, err := leaderAmong(srv)
	if err != nil {
		return 0, err
	}
	if err := applyCosts(l); err != nil {
		return 0, err
	}

	// 2. Placement: resume and wait for every job to be placed.
	placed := func() int {
		n := 0
		l.Read(func(s *state.State) {
			for _, j := range s.Jobs {
				if j.State != structs.JobPending {
					n++
				}
			}
		})
		return n
	}
	start = time.Now()
	for _, s := range srv {
		s.PauseScheduling(false)
	}
	if err := until(5*time.Minute, func() bool { return placed() == *flagJobs }); err != nil {
		return 0, fmt.Errorf("placed %d of %d jobs: %w", placed(), *flagJobs, err)
	}
	wall := time.Since(start)
	cycles, commitSecs := histogram(l, "atom_plan_commit_seconds", "")
	_, scheduleSecs := histogram(l, "atom_schedule_seconds", "")
	entries, _ := histogram(l, "atom_raft_apply_seconds", "PlanCommit")
	fmt.Printf("plan_cycles=%d plan_entries=%d placements_per_entry=%.0f schedule_ms=%.0f commit_ms=%.0f place_wall_ms=%.0f\n",
		cycles, entries, float64(*flagJobs)/float64(max(entries, 1)), scheduleSecs*1000, commitSecs*1000, float64(wall.Milliseconds()))
	var invErr error
	for _, s := range srv {
		if err := until(30*time.Second, func() bool { return index(s) == index(l) }); err != nil {
			return 0, fmt.Errorf("server %s never caught up: %w", s.ID(), err)
		}
		s.Read(func(st *state.State) { invErr = errors.Join(invErr, st.CheckInvariants()) })
	}
	if invErr != nil {
		return 0, fmt.Errorf("invariants: %w", invErr)
	}
	return float64(*flagJobs) / wall.Seconds(), nil
}

// applyCosts times, outside Raft, on a copy of l's state: one JobSubmit
// apply (admission builds a world over the whole state), one scheduling
// cycle over every pending job and the apply of its PlanCommit. These are
// the state machine's and the core's shares of the throughput run.
func applyCosts(l *server.Server) error {
	var raw []byte
	var err error
	l.Read(func(s *state.State) { raw, err = json.Marshal(s) })
	if err != nil {
		return err
	}
	load := func() (*state.State, error) {
		cp := state.New()
		return cp, json.Unmarshal(raw, cp)
	}
	cp, err := load()
	if err != nil {
		return err
	}
	const probes = 100
	now := time.Now()
	t := time.Now()
	for i := range probes {
		if _, err := cp.Apply(cp.Index+1, &state.JobSubmit{RequestID: fmt.Sprint("probe-", i), Job: job("probe", i), Now: now}); err != nil {
			return fmt.Errorf("probe submit: %w", err)
		}
	}
	perSubmit := time.Since(t) / probes
	if cp, err = load(); err != nil {
		return err
	}
	t = time.Now()
	snap, pending := cp.Snapshot(), cp.Pending()
	plan := sched.Schedule(snap, sched.Input{Pending: pending, Now: now, Seed: snap.Index})
	plan.Pending = nil
	schedTook := time.Since(t)
	t = time.Now()
	b, err := state.Encode(&state.PlanCommit{Plan: plan, Now: now})
	if err != nil {
		return err
	}
	encTook := time.Since(t)
	t = time.Now()
	c, err := state.Decode(b)
	if err != nil {
		return err
	}
	decTook := time.Since(t)
	t = time.Now()
	res, err := cp.Apply(cp.Index+1, c)
	if err != nil {
		return err
	}
	fmt.Printf("state_jobs=%d state_nodes=%d jobsubmit_apply_us=%.0f\n", len(cp.Jobs), len(cp.Nodes), float64(perSubmit.Microseconds()))
	fmt.Printf("one_cycle_placements=%d schedule_ms=%.0f plan_encode_ms=%.0f plan_bytes=%d plan_decode_ms=%.0f plan_apply_ms=%.0f\n",
		len(res.(state.CommitResult).Placed), ms(schedTook), ms(encTook), len(b), ms(decTook), ms(time.Since(t)))
	return nil
}

// apply commits c on whichever server leads, retrying with the same
// command (JobSubmits carry request IDs) while leadership moves, as a
// client would. It returns the leader that answered.
func apply(srv []*server.Server, c state.Command) (*server.Server, any, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, s := range srv {
			if !s.IsLeader() {
				continue
			}
			res, err := s.Apply(context.Background(), c)
			if err == nil || !(errors.Is(err, server.ErrNotLeader) || errors.Is(err, server.ErrOutcomeUnknown)) {
				return s, res, err
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("apply %T: no leader for 30s", c)
		}
		time.Sleep(time.Millisecond)
	}
}

// leaderOf waits for a leader among srv.
func leaderAmong(srv []*server.Server) (*server.Server, error) {
	var l *server.Server
	err := until(30*time.Second, func() bool {
		for _, s := range srv {
			if s.IsLeader() {
				l = s
				return true
			}
		}
		return false
	})
	return l, err
}

func index(s *server.Server) uint64 {
	var i uint64
	s.Read(func(st *state.State) { i = st.Index })
	return i
}

// commitAlone submits -alone JobSubmits one at a time, scheduling paused,
// to a fresh cluster: a commit with nothing else to do, the least one
// takes on this machine with these servers. It returns the p99 in ms.
func commitAlone(dir string) (float64, error) {
	srv, err := seededCluster(dir, true)
	if err != nil {
		return 0, err
	}
	defer shutdown(srv)
	lat := make([]time.Duration, *flagAlone)
	for i := range lat {
		t := time.Now()
		if _, _, err := apply(srv, &state.JobSubmit{RequestID: fmt.Sprint("alone-", i), Job: job("alone", i), Now: t}); err != nil {
			return 0, fmt.Errorf("submit: %w", err)
		}
		lat[i] = time.Since(t)
	}
	fmt.Printf("alone_commits=%d commit_alone_p50_ms=%.2f commit_alone_p90_ms=%.2f commit_alone_p99_ms=%.2f commit_alone_max_ms=%.2f\n",
		len(lat), ms(pct(lat, 50)), ms(pct(lat, 90)), ms(pct(lat, 99)), ms(pct(lat, 100)))
	return ms(pct(lat, 99)), nil
}

// latency offers JobSubmits at -rate per second for -duration, open loop,
// and returns the p99 from Apply call to applied on the leader, in ms.
func latency(dir string) (float64, error) {
	srv, err := seededCluster(dir, *flagPauseLat)
	if err != nil {
		return 0, err
	}
	defer shutdown(srv)
	n := int(float64(*flagRate) * flagDuration.Seconds())
	lat := make([]time.Duration, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(*flagRate)
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.Now()
			_, _, err := apply(srv, &state.JobSubmit{RequestID: fmt.Sprint(i), Job: job("lat", i), Now: t})
			lat[i] = time.Since(t)
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	offered := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("submit: %w", err)
	}
	fmt.Printf("latency_offered=%d latency_rate_per_sec=%.0f submit_p50_ms=%.2f submit_p90_ms=%.2f submit_max_ms=%.2f\n",
		n, float64(n)/offered.Seconds(), ms(pct(lat, 50)), ms(pct(lat, 90)), ms(pct(lat, 100)))
	return ms(pct(lat, 99)), nil
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// histogram returns the sample count and sum of histogram name on s,
// summed over its series whose command label is command ("" for all).
func histogram(s *server.Server, name, command string) (n int, sum float64) {
	mfs, _ := s.Metrics().Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := command == ""
			for _, l := range m.GetLabel() {
				match = match || l.GetName() == "command" && l.GetValue() == command
			}
			if match {
				n += int(m.GetHistogram().GetSampleCount())
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return n, sum
}

// logLevel is Error, or what BENCHRAFT_LOG says (debug, info, warn).
func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("BENCHRAFT_LOG"))); err != nil {
		return slog.LevelError
	}
	return l
}
