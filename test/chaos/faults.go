package chaos

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

// faults injects one fault at a time, in a shuffled rotation, until stop:
//
//	kill -9 the leader ─▶ wait for a new one ─▶ restart it after 1-3 s
//	SIGSTOP a follower for 1.5-3 s (the election timeout is 300 ms) ─▶ SIGCONT
//	kill -9 one or two `atom run` processes
//	cut a server (the leader every other time) off the others' Raft traffic for 3-6 s
type faults struct {
	c    *cluster
	w    *watcher
	rng  *rand.Rand
	run  string
	logf func(string, ...any)

	mu           sync.Mutex
	leaderKills  int
	failovers    int           // a new leader after a kill or a cut of the leader
	noFailover   int           // none within failoverWait
	maxFailover  time.Duration // from the kill or cut to the new leader
	pauses       int
	atomKills    int
	cuts         int
	leaderCuts   int
	killedTasks  map[string]bool // tasks whose atom the suite killed
	doubledTasks map[string]bool // tasks seen with two live atom processes
}

// failoverWait is how long a kill or cut of the leader may leave the
// cluster without one before the suite calls it a failed failover.
const failoverWait = 15 * time.Second

func (f *faults) atomBin() string { return filepath.Join(f.c.bin, "atom") }

func (f *faults) sleep(ctx context.Context, lo, hi time.Duration) {
	d := lo
	if hi > lo {
		d += time.Duration(f.rng.Int64N(int64(hi - lo)))
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (f *faults) loop(ctx context.Context, stop <-chan struct{}) {
	kinds := []func(context.Context){f.killLeader, f.pauseFollower, f.killAtoms, f.cutServer}
	// The first fault waits until the workload is running.
	f.sleep(ctx, 2*time.Second, 3*time.Second)
	for {
		for _, i := range f.rng.Perm(len(kinds)) {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			kinds[i](ctx)
			f.sleep(ctx, time.Second, 2500*time.Millisecond)
		}
	}
}

// failover waits for a leader other than old, from t on.
func (f *faults) failover(ctx context.Context, old string, t time.Time) {
	deadline := t.Add(failoverWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if l := f.c.leader(ctx); l != nil && l.id != old {
			d := time.Since(t)
			f.mu.Lock()
			f.failovers++
			f.maxFailover = max(f.maxFailover, d)
			f.mu.Unlock()
			f.logf("  new leader %s %s after losing %s", l.id, d.Round(time.Millisecond), old)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.mu.Lock()
	f.noFailover++
	f.mu.Unlock()
	f.logf("  no new leader within %s after losing %s", failoverWait, old)
}

func (f *faults) killLeader(ctx context.Context) {
	l := f.c.waitLeader(ctx, 10*time.Second)
	if l == nil {
		return
	}
	t := time.Now()
	f.w.leaderLost(t)
	l.kill()
	f.mu.Lock()
	f.leaderKills++
	f.mu.Unlock()
	f.logf("fault: kill -9 leader %s", l.id)
	f.failover(ctx, l.id, t)
	f.sleep(ctx, time.Second, 3*time.Second)
	if err := f.c.start(l); err != nil {
		f.logf("  restart %s: %v", l.id, err)
		return
	}
	f.logf("  restarted %s", l.id)
}

func (f *faults) pauseFollower(ctx context.Context) {
	l := f.c.waitLeader(ctx, 10*time.Second)
	var cands []*server
	for _, s := range f.c.servers {
		if s != l && s.alive() && !s.isPaused() {
			cands = append(cands, s)
		}
	}
	if l == nil || len(cands) == 0 {
		return
	}
	s := cands[f.rng.IntN(len(cands))]
	if err := s.signal(syscall.SIGSTOP); err != nil {
		return
	}
	f.mu.Lock()
	f.pauses++
	f.mu.Unlock()
	d := 1500*time.Millisecond + time.Duration(f.rng.Int64N(int64(1500*time.Millisecond)))
	f.logf("fault: SIGSTOP follower %s for %s", s.id, d.Round(time.Millisecond))
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	_ = s.signal(syscall.SIGCONT)
}

func (f *faults) killAtoms(ctx context.Context) {
	var atoms []proc
	for _, p := range taskProcs(f.run, f.atomBin()) {
		if p.atom {
			atoms = append(atoms, p)
		}
	}
	if len(atoms) == 0 {
		return
	}
	n := min(len(atoms), 1+f.rng.IntN(2))
	for _, i := range f.rng.Perm(len(atoms))[:n] {
		p := atoms[i]
		if syscall.Kill(p.pid, syscall.SIGKILL) != nil {
			continue
		}
		f.mu.Lock()
		f.atomKills++
		f.killedTasks[p.task] = true
		f.mu.Unlock()
		f.logf("fault: kill -9 atom of task %s (pid %d)", p.task, p.pid)
	}
}

func (f *faults) cutServer(ctx context.Context) {
	l := f.c.waitLeader(ctx, 10*time.Second)
	if l == nil {
		return
	}
	f.mu.Lock()
	f.cuts++
	leaderTurn := f.cuts%2 == 1
	f.mu.Unlock()
	s := l
	if !leaderTurn {
		var cands []*server
		for _, o := range f.c.servers {
			if o != l && o.alive() {
				cands = append(cands, o)
			}
		}
		if len(cands) == 0 {
			return
		}
		s = cands[f.rng.IntN(len(cands))]
	}
	d := 3*time.Second + time.Duration(f.rng.Int64N(int64(3*time.Second)))
	t := time.Now()
	if s == l {
		f.w.leaderLost(t)
		f.mu.Lock()
		f.leaderCuts++
		f.mu.Unlock()
	}
	f.c.net.cutOff(s.id)
	role := "follower"
	if s == l {
		role = "leader"
	}
	f.logf("fault: cut %s %s off the other servers' Raft traffic for %s", role, s.id, d.Round(time.Millisecond))
	if s == l {
		f.failover(ctx, l.id, t)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t.Add(d))):
	}
	f.c.net.heal(s.id)
	f.logf("  healed %s", s.id)
}

// watchProcs samples the run's processes every period until ctx ends and
// records any task that runs twice: two atom processes, neither the
// other's child, both alive in two samples in a row. (A process atom has
// just forked shows atom's command line until it execs its own program:
// that is atom's child, not a second atom.)
func (f *faults) watchProcs(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	prev := map[string]map[int]bool{}
	for {
		seen := map[string]map[int]bool{}
		procs := taskProcs(f.run, f.atomBin())
		atoms := map[int]bool{}
		for _, p := range procs {
			if p.atom {
				atoms[p.pid] = true
			}
		}
		for _, p := range procs {
			if p.atom && p.task != "" && !atoms[p.ppid] {
				if seen[p.task] == nil {
					seen[p.task] = map[int]bool{}
				}
				seen[p.task][p.pid] = true
			}
		}
		for task, pids := range seen {
			both := 0
			for pid := range pids {
				if prev[task][pid] {
					both++
				}
			}
			if both > 1 {
				f.mu.Lock()
				if !f.doubledTasks[task] {
					f.logf("problem: task %s runs %d times", task, both)
				}
				f.doubledTasks[task] = true
				f.mu.Unlock()
			}
		}
		prev = seen
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// repair undoes every fault still in place: heals cuts, resumes paused
// servers and restarts dead ones.
func (f *faults) repair() {
	for _, s := range f.c.servers {
		f.c.net.heal(s.id)
		if s.isPaused() {
			_ = s.signal(syscall.SIGCONT)
		}
		if !s.alive() {
			if err := f.c.start(s); err != nil {
				f.logf("restart %s: %v", s.id, err)
			}
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
