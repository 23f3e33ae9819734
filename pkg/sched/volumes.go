package sched

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// volumeUse is who mounts each persistent volume claim: a claim mounted
// read-write is one job's alone; read-only, any number of jobs may share
// it, but none writes it meanwhile. A claim is a PersistentVolumeClaim of
// one cluster, so the same name in two clusters is two volumes; when the
// leader did not say which clusters hold which claims (Snapshot.Volumes
// nil: a coordinator without kubernetes clusters), a name is taken as one
// volume across clusters.
type volumeUse struct {
	perCluster bool
	writer     map[volKey]structs.JobID
	readers    map[volKey][]structs.JobID
}

type volKey struct {
	cluster structs.ClusterID
	claim   string
}

// newVolumeUse is the claims mounted by the jobs that hold resources
// (those stopping too: their Pods still mount them).
func newVolumeUse(w *world) *volumeUse {
	u := &volumeUse{perCluster: w.snap.Volumes != nil, writer: map[volKey]structs.JobID{}, readers: map[volKey][]structs.JobID{}}
	any := false
	for _, j := range w.snap.Jobs {
		if len(j.Volumes) > 0 {
			any = true
			break
		}
	}
	if !any {
		return u // the common case: no job mounts a volume, nothing to look up per task
	}
	for k := range w.tasks {
		wt := &w.tasks[k]
		if wt.off || wt.job == nil || len(wt.job.Volumes) == 0 {
			continue
		}
		var cl structs.ClusterID
		if wt.ni >= 0 {
			cl = w.nodes[wt.ni].n.Cluster
		}
		u.add(wt.job, cl)
	}
	return u
}

func (u *volumeUse) key(cluster structs.ClusterID, claim string) volKey {
	if !u.perCluster {
		cluster = ""
	}
	return volKey{cluster, claim}
}

// add records j's mounts in cluster.
func (u *volumeUse) add(j *structs.Job, cluster structs.ClusterID) {
	for _, v := range j.Volumes {
		k := u.key(cluster, v.Claim)
		if v.ReadOnly {
			if !slices.Contains(u.readers[k], j.ID) {
				u.readers[k] = append(u.readers[k], j.ID)
			}
		} else if _, ok := u.writer[k]; !ok {
			u.writer[k] = j.ID
		}
	}
}

// blockers lists the jobs whose mounts in cluster keep j from mounting
// its volumes there, and says why (the first one) in words.
func (u *volumeUse) blockers(w *world, j *structs.Job, cluster structs.ClusterID) ([]structs.JobID, string) {
	var by []structs.JobID
	msg := ""
	block := func(o structs.JobID, text string) {
		if o == j.ID || slices.Contains(by, o) {
			return
		}
		by = append(by, o)
		if msg == "" {
			msg = text
			if w.victim[o] {
				msg += "; it is being stopped (preempted)"
			}
		}
	}
	for _, v := range j.Volumes {
		k := u.key(cluster, v.Claim)
		if o, ok := u.writer[k]; ok {
			block(o, fmt.Sprintf("waits for volume %s: job %s mounts it read-write (one job at a time)", v.Claim, o))
		}
		if !v.ReadOnly {
			for _, o := range u.readers[k] {
				block(o, fmt.Sprintf("waits for volume %s: job %s mounts it read-only, and a volume is written by one job while no other mounts it", v.Claim, o))
			}
		}
	}
	return by, msg
}

// volumePlaces is where job j may go for its volumes.
type volumePlaces struct {
	// free marks, per cluster, those holding every claim j names where
	// no other job's mount is in j's way; nil: any cluster.
	free []bool
	// wait, when no cluster is free, says why j waits; never when it
	// cannot go anywhere as the clusters are (a cluster pinned that is
	// not a kubernetes one).
	wait  string
	never bool
	// evict lists, in cluster order, clusters holding j's claims where
	// only low-priority jobs (none of them stopping) are in the way of a
	// normal or high job j, with those jobs.
	evict []volumeEvict
}

type volumeEvict struct {
	only []bool // the cluster
	jobs []structs.JobID
}

// volumePlaces decides where j may go for its volumes: the clusters
// holding every claim it names (Snapshot.Volumes; any cluster when nil)
// where no other job mounts them in the way (one writer, or readers).
func (w *world) volumePlaces(j *structs.Job, u *volumeUse) volumePlaces {
	var vp volumePlaces
	evictable := func(by []structs.JobID) bool {
		if j.Priority <= structs.PriorityLow {
			return false
		}
		for _, o := range by {
			oj := w.snap.Jobs[o]
			if oj == nil || oj.Priority != structs.PriorityLow || w.victim[o] {
				return false
			}
		}
		return true
	}
	if w.snap.Volumes == nil {
		by, msg := u.blockers(w, j, "")
		if len(by) == 0 {
			return vp
		}
		vp.free, vp.wait = make([]bool, len(w.clusters)), msg
		if evictable(by) {
			vp.evict = []volumeEvict{{jobs: by}}
		}
		return vp
	}
	vp.free = make([]bool, len(w.clusters))
	holds := false
	for _, c := range w.allCl {
		name := w.clusters[c]
		if j.Cluster != "" && name != j.Cluster || !w.holdsClaims(j, name) {
			continue
		}
		holds = true
		by, msg := u.blockers(w, j, name)
		if len(by) == 0 {
			vp.free[c] = true
			continue
		}
		if vp.wait == "" {
			vp.wait = msg
		}
		if evictable(by) {
			only := make([]bool, len(w.clusters))
			only[c] = true
			vp.evict = append(vp.evict, volumeEvict{only: only, jobs: by})
		}
	}
	if !holds {
		vp.wait, vp.never = w.claimsMissing(j)
		return vp
	}
	if slices.Contains(vp.free, true) {
		vp.wait, vp.evict = "", nil
	}
	return vp
}

// holdsClaims reports whether cluster c holds every claim j names.
func (w *world) holdsClaims(j *structs.Job, c structs.ClusterID) bool {
	held := w.snap.Volumes[c]
	for _, v := range j.Volumes {
		if !held[v.Claim] {
			return false
		}
	}
	return true
}

// claimsMissing says why no cluster with nodes may take j for its
// volumes, naming the volume and the clusters checked; never when j is
// pinned to a cluster that is not a kubernetes one.
func (w *world) claimsMissing(j *structs.Job) (string, bool) {
	kube := slices.Sorted(maps.Keys(w.snap.Volumes))
	checked := kube
	if j.Cluster != "" {
		if _, ok := w.snap.Volumes[j.Cluster]; !ok {
			return fmt.Sprintf("waits for volume %s: cluster %s is no kubernetes cluster, and a volume is a PersistentVolumeClaim in one (%s)",
				j.Volumes[0].Claim, j.Cluster, joinClusters(kube, ", ")), true
		}
		checked = []structs.ClusterID{j.Cluster}
	}
	for _, v := range j.Volumes {
		var in []structs.ClusterID
		for _, c := range checked {
			if w.snap.Volumes[c][v.Claim] {
				in = append(in, c)
			}
		}
		if len(in) == 0 {
			target := "CLUSTER"
			if len(checked) == 1 {
				target = string(checked[0])
			}
			return fmt.Sprintf("waits for volume %s: no cluster has it (checked %s); create it with coordinator volume create %s --size SIZE --cluster %s",
				v.Claim, joinClusters(checked, ", "), v.Claim, target), false
		}
	}
	// Every claim is somewhere, but not all in one cluster with nodes.
	var names, where []string
	for _, v := range j.Volumes {
		if slices.Contains(names, v.Claim) {
			continue
		}
		names = append(names, v.Claim)
		var in []structs.ClusterID
		for _, c := range checked {
			if w.snap.Volumes[c][v.Claim] {
				in = append(in, c)
			}
		}
		where = append(where, v.Claim+" in "+joinClusters(in, ", "))
	}
	return fmt.Sprintf("waits for volumes %s: no one cluster with nodes has them all (%s); a job runs in one cluster",
		strings.Join(names, ", "), strings.Join(where, "; ")), false
}

func joinClusters(cs []structs.ClusterID, sep string) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, sep)
}

// preemptForVolumes evicts, for normal or high job j, the low jobs in the
// way of its volumes in the first cluster where that, with any further low
// jobs evicted for room, makes j fit (nothing is evicted otherwise).
func (w *world) preemptForVolumes(j *structs.Job, vp volumePlaces) []Preemption {
	if w.hasHolds(j.ID, ReservePreemption) {
		return nil
	}
	pools := w.eligiblePools(j)
	for _, e := range vp.evict {
		var forced []*victim
		for _, id := range e.jobs {
			forced = append(forced, w.victimOf(w.snap.Jobs[id]))
		}
		if pre, _ := w.preempt(ask{j: j, only: e.only}, pools, forced); len(pre) > 0 {
			return pre
		}
	}
	return nil
}
