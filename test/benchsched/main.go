// Command benchsched measures the scheduling core: one Schedule call over a
// generated cluster of 10,000 nodes and 100,000 pending jobs.
// Run it with GOMAXPROCS=1 (make bench-sched). Output is key=value lines;
// the last two are placements_per_sec and p99_decision_us.
//
// With -topology the nodes are labelled into racks of 8 nodes of one GPU
// model and blocks of 4 racks (schedtest.Racks; levels block, rack) and
// the gangs ask for a rack, every other one required, the rest preferred;
// it also prints how many gangs were placed and how many of those in one
// rack.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

func main() {
	nodes := flag.Int("nodes", 10000, "nodes in the generated cluster")
	jobs := flag.Int("jobs", 100000, "pending jobs")
	seed := flag.Uint64("seed", 1, "generator seed")
	rounds := flag.Int("rounds", 5, "measured runs (the median by wall time is reported)")
	topo := flag.Bool("topology", false, "label racks and blocks, and have the gangs ask for a rack")
	flag.Parse()

	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cluster := schedtest.GenCluster(*nodes, *seed)
	pending := schedtest.GenJobs(*jobs, *seed, start)
	snap := schedtest.GenSnapshot(cluster, pending)
	if *topo {
		schedtest.Racks(cluster, 8, 4)
		snap.Topology = map[structs.ClusterID][]string{"": schedtest.RackLevels}
		gangs := 0
		for _, j := range pending {
			if !j.IsGang() {
				continue
			}
			if gangs++; gangs%2 == 0 {
				j.Topology = &structs.JobTopology{Required: "rack"}
			} else {
				j.Topology = &structs.JobTopology{Preferred: "rack"}
			}
		}
		fmt.Println("variant=topology levels=block,rack nodes_per_rack=8 racks_per_block=4")
	}
	var gpus int64
	for _, n := range cluster {
		gpus += n.Capacity.Accels
	}
	fmt.Printf("nodes=%d gpus=%d jobs=%d\n", len(cluster), gpus, len(pending))

	var all []result
	for r := range *rounds {
		res := run(snap, pending, start.Add(time.Minute))
		fmt.Printf("round=%d placed_jobs=%d placed_gpus=%d decisions=%d wall_ms=%.1f\n",
			r, res.placed, res.gpus, res.decisions, float64(res.wall.Microseconds())/1000)
		all = append(all, res)
	}
	slices.SortFunc(all, func(a, b result) int { return int(a.wall - b.wall) })
	best := all[len(all)/2]
	fmt.Printf("median_round_wall_ms=%.1f\n", float64(best.wall.Microseconds())/1000)
	if *topo {
		placed, oneRack := gangRacks(best.after)
		fmt.Printf("gangs_placed=%d gangs_one_rack=%d\n", placed, oneRack)
	}
	if err := sched.CheckInvariants(best.after); err != nil {
		fmt.Fprintln(os.Stderr, "invariants:", err)
		os.Exit(1)
	}
	secs := best.wall.Seconds()
	fmt.Printf("decisions_per_sec=%.0f\n", float64(best.decisions)/secs)
	fmt.Printf("p50_decision_us=%.1f\n", pct(best.lat, 50))
	fmt.Printf("placements_per_sec=%.0f\n", float64(best.placed)/secs)
	fmt.Printf("p99_decision_us=%.1f\n", pct(best.lat, 99))
}

type result struct {
	placed, decisions int
	gpus              int64
	wall              time.Duration
	lat               []time.Duration
	after             *sched.Snapshot
}

func run(snap *sched.Snapshot, pending []*structs.Job, now time.Time) result {
	lat := make([]time.Duration, 0, len(pending))
	res := result{}
	t0 := time.Now()
	last := t0
	plan := sched.Schedule(snap, sched.Input{Pending: pending, Now: now, Seed: 1,
		OnDecision: func(_ structs.JobID, placed bool) {
			t := time.Now()
			lat = append(lat, t.Sub(last))
			last = t
			res.decisions++
			if placed {
				res.placed++
			}
		}})
	res.wall = time.Since(t0)
	res.lat = lat
	// Play the placements into a copy of the snapshot for the invariant check.
	after := *snap
	after.Tasks = nil
	after.Jobs = map[structs.JobID]*structs.Job{}
	for id, j := range snap.Jobs {
		after.Jobs[id] = j
	}
	for _, pl := range plan.Placements {
		j := *after.Jobs[pl.Job]
		j.State = structs.JobScheduled
		after.Jobs[pl.Job] = &j
		for _, tp := range pl.Tasks {
			res.gpus += tp.Resources.Accels
			after.Tasks = append(after.Tasks, &structs.Task{ID: structs.MakeTaskID(pl.Job, tp.Index, 0), Job: pl.Job,
				Index: tp.Index, Node: tp.Node, State: structs.TaskRunning, Resources: tp.Resources, Accels: tp.Accels})
		}
	}
	res.after = &after
	return res
}

func pct(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[(len(s)-1)*p/100].Nanoseconds()) / 1000
}

// gangRacks counts the gangs placed in snap and those of them whose
// replicas all share one rack.
func gangRacks(snap *sched.Snapshot) (placed, oneRack int) {
	rack := map[structs.NodeID]string{}
	for _, n := range snap.Nodes {
		rack[n.Name] = n.Tags["block"] + "/" + n.Tags["rack"]
	}
	racks := map[structs.JobID]map[string]bool{}
	for _, t := range snap.Tasks {
		if j := snap.Jobs[t.Job]; j != nil && j.IsGang() {
			if racks[t.Job] == nil {
				racks[t.Job] = map[string]bool{}
			}
			racks[t.Job][rack[t.Node]] = true
		}
	}
	for _, r := range racks {
		placed++
		if len(r) == 1 {
			oneRack++
		}
	}
	return placed, oneRack
}
