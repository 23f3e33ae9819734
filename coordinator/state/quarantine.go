package state

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/atom-sched/atom/pkg/structs"
)

// MaxPreflightRequeues bounds the requeues of one job after failed
// preflights. A job whose preflight failed on this many allocations is
// itself suspect (an image without the NVIDIA runtime fails everywhere):
// a further failure quarantines nothing and is an ordinary failure, so
// one bad job cannot quarantine a whole cluster.
const MaxPreflightRequeues = 3

// maxQuarantineReason bounds the reason kept with each quarantined
// accelerator (the preflight's message), in bytes.
const maxQuarantineReason = 256

// preflightFailed handles a Failed event with ReasonPreflightFailed for
// task t, already marked Failed: it quarantines the failed accelerators
// on t's node and, when t belongs to its job's current attempt and was not
// being stopped anyway, requeues the job without using its restart budget
// (a service's replica is simply placed again by the next cycle). It
// returns false, with the message to record, when the event is an
// ordinary failure instead: t held no accelerators, or its job already
// used its MaxPreflightRequeues.
func (s *State) preflightFailed(t *structs.Task, e structs.TaskEvent, current bool) (bool, string) {
	j := s.Jobs[t.Job]
	switch {
	case t.Accels == 0:
		return false, e.Message + " (the task held no accelerators: nothing quarantined)"
	case j != nil && j.PreflightFailures >= MaxPreflightRequeues:
		return false, fmt.Sprintf("%s (nothing quarantined: the job failed preflight on %d allocations already, so the job itself is suspect)", e.Message, j.PreflightFailures)
	}
	var bad structs.AccelMask
	for _, a := range e.Accelerators {
		bad |= 1 << uint(a) // 0..63: TaskUpdate checked
	}
	if bad &= t.Accels; bad == 0 {
		bad = t.Accels // atom could not tell which: all of the task's
	}
	s.quarantine(t, bad, e)
	if j == nil || !current || j.State.Ended() {
		return true, ""
	}
	why := fmt.Sprintf("%s of node %s failed preflight%s", accelList(bad), t.Node, suffix(e.Message))
	if j.Kind == structs.KindService {
		s.putJob(j.ID, func(j *structs.Job) {
			j.PreflightFailures++
			j.Reason = fmt.Sprintf("replica %d placed again: %s", t.Index, why)
		})
		return true, ""
	}
	// The whole job goes elsewhere: siblings stop, then it is requeued
	// (afterStop, StopGang) with this reason and a new attempt, counted
	// then.
	reason := "requeued: " + why
	s.putJob(j.ID, func(j *structs.Job) { j.Reason = reason; countRequeue(j, structs.CausePreflight) })
	s.restart(j.ID, reason, e.Time, false, structs.StopGang)
	return true, ""
}

// CheckReason checks a task event's Reason and Accelerators; the API
// runs it on heartbeats too.
func CheckReason(e structs.TaskEvent) error {
	switch {
	case e.Reason == "" && len(e.Accelerators) == 0:
		return nil
	case e.Reason == "":
		return invalidf("task %s: accelerators are only allowed with reason %s", e.Task, structs.ReasonPreflightFailed)
	case (e.Reason == structs.ReasonStoppedOutside || e.Reason == structs.ReasonDisconnected) && len(e.Accelerators) > 0:
		return invalidf("task %s: accelerators are only allowed with reason %s", e.Task, structs.ReasonPreflightFailed)
	case (e.Reason == structs.ReasonStoppedOutside || e.Reason == structs.ReasonDisconnected) && e.State != structs.TaskFailed && e.State != structs.TaskSucceeded:
		return invalidf("task %s: reason %s is only allowed with state Succeeded or Failed, not %q", e.Task, e.Reason, trunc(string(e.State)))
	case e.Reason == structs.ReasonStoppedOutside || e.Reason == structs.ReasonDisconnected:
		return nil
	case e.Reason == structs.ReasonLauncherGone && len(e.Accelerators) > 0:
		return invalidf("task %s: accelerators are only allowed with reason %s", e.Task, structs.ReasonPreflightFailed)
	case e.Reason == structs.ReasonLauncherGone && e.State != structs.TaskFailed:
		return invalidf("task %s: reason %s is only allowed with state Failed, not %q", e.Task, e.Reason, trunc(string(e.State)))
	case e.Reason == structs.ReasonLauncherGone:
		return nil
	case e.Reason != structs.ReasonPreflightFailed:
		return invalidf("task %s: reason %q is not allowed: use %s, %s, %s, %s or leave it out", e.Task, trunc(e.Reason),
			structs.ReasonPreflightFailed, structs.ReasonStoppedOutside, structs.ReasonDisconnected, structs.ReasonLauncherGone)
	case e.State != structs.TaskFailed:
		return invalidf("task %s: reason %s is only allowed with state Failed, not %q", e.Task, e.Reason, trunc(string(e.State)))
	case len(e.Accelerators) > structs.MaxAccelsPerNode:
		return invalidf("task %s: %d accelerators are not allowed: list at most %d", e.Task, len(e.Accelerators), structs.MaxAccelsPerNode)
	}
	for _, a := range e.Accelerators {
		if a < 0 || a >= structs.MaxAccelsPerNode {
			return invalidf("task %s: accelerator %d is not allowed: use indices 0 to %d", e.Task, a, structs.MaxAccelsPerNode-1)
		}
	}
	return nil
}

// trunc shortens s for an error message.
func trunc(s string) string { return cut(s, 64) }

// quarantine records accelerators bad of t's node as quarantined since
// e.Time; one already quarantined keeps its first record.
func (s *State) quarantine(t *structs.Task, bad structs.AccelMask, e structs.TaskEvent) {
	old := s.Nodes[t.Node]
	if old == nil {
		return
	}
	n := *old
	n.Quarantined = slices.Clone(old.Quarantined)
	have := old.QuarantinedMask()
	for _, a := range bad.Indices() {
		if have&(1<<uint(a)) == 0 {
			n.Quarantined = append(n.Quarantined, structs.Quarantine{Accel: a, Reason: clip(e.Message), Since: e.Time, Task: t.ID})
		}
	}
	slices.SortFunc(n.Quarantined, func(a, b structs.Quarantine) int { return a.Accel - b.Accel })
	s.Nodes[n.Name] = &n
	s.admitter = nil
	ev := taskEventOf(e.Time, t, structs.EventQuarantined, "%s of node %s quarantined: %s failed preflight%s", accelList(bad), t.Node, replicaName(t), suffix(clip(e.Message)))
	ev.Accelerators = bad.Indices()
	s.record(ev)
}

// keptQuarantine is what a NodeUpsert of n keeps of the node's
// quarantine: a spec never sets it, and accelerators the new capacity no
// longer has are dropped.
func (s *State) keptQuarantine(n *structs.Node) []structs.Quarantine {
	old := s.Nodes[n.Name]
	if old == nil {
		return nil
	}
	var out []structs.Quarantine
	for _, q := range old.Quarantined {
		if int64(q.Accel) < n.Capacity.Accels {
			out = append(out, q)
		}
	}
	return out
}

// NodeRelease returns quarantined accelerators of a node to service once
// the hardware is fixed (admins). No Accels releases all of them. Naming
// an accelerator that is not quarantined is harmless, so a retried
// release succeeds.
type NodeRelease struct {
	Name   structs.NodeID `json:"name"`
	Accels []int          `json:"accelerators,omitempty"`
}

// ReleaseResult says what NodeRelease returned to service.
type ReleaseResult struct {
	Released    []int `json:"released"`
	Quarantined []int `json:"quarantined"` // still quarantined
}

func (*NodeRelease) Type() MsgType { return MsgNodeRelease }

func (c *NodeRelease) apply(s *State) (any, error) {
	old := s.Nodes[c.Name]
	if old == nil {
		return nil, fmt.Errorf("node %s: %w", c.Name, ErrNotFound)
	}
	for _, a := range c.Accels {
		if a < 0 || int64(a) >= old.Capacity.Accels {
			if old.Capacity.Accels == 0 {
				return nil, invalidf("node %s has no accelerators: release it without naming any", c.Name)
			}
			return nil, invalidf("node %s: accelerator %d is not allowed: use 0 to %d", c.Name, a, old.Capacity.Accels-1)
		}
	}
	res := ReleaseResult{Released: []int{}, Quarantined: []int{}}
	n := *old
	n.Quarantined = nil
	for _, q := range old.Quarantined {
		if len(c.Accels) == 0 || slices.Contains(c.Accels, q.Accel) {
			res.Released = append(res.Released, q.Accel)
			continue
		}
		n.Quarantined = append(n.Quarantined, q)
		res.Quarantined = append(res.Quarantined, q.Accel)
	}
	if len(res.Released) > 0 {
		s.Nodes[n.Name] = &n
		s.admitter = nil
	}
	return res, nil
}

// accelList names accelerators for people: "accelerator 2",
// "accelerators 2,3".
func accelList(m structs.AccelMask) string {
	idx := m.Indices()
	s := make([]string, len(idx))
	for i, a := range idx {
		s[i] = strconv.Itoa(a)
	}
	if len(s) == 1 {
		return "accelerator " + s[0]
	}
	return "accelerators " + strings.Join(s, ",")
}

// clip shortens a quarantine's reason.
func clip(m string) string { return cut(m, maxQuarantineReason) }

// cut shortens s to n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}
