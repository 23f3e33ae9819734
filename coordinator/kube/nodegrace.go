package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The NotReady grace of a node (Config.NodeGrace) counts from when the
// node stopped being Ready, whichever server leads:
//
//	informer: Ready → not Ready (this server saw it go)  ──▶ since = this server's now
//	informer: first seen not Ready (server started, node new) ──▶ since = Ready's lastTransitionTime
//	                                                            (a future one, or none: now)
//	Sweep (leader): lost once now − since ≥ NodeGrace and the term is one HeartbeatTTL old
//
// Every server runs the Node informer, so a follower that becomes leader
// has measured the grace all along with its own clock; a server that
// started while the node was down takes the time the kubelet or the node
// lifecycle controller wrote into the API server (what that controller
// measures its own grace from), instead of starting the grace again.
// Clocks are bounded on both sides: a transition time ahead of this
// server's clock counts as now (never early), one behind it by a skew is
// used only when the server did not see the change itself, and in no case
// does a leader declare a task lost before it has led for one heartbeat
// TTL (after a leader change every task gets a full TTL,
// whatever an earlier leader or the API server's clock says). So a task on
// a node that is down is lost at max(since + NodeGrace, elected +
// HeartbeatTTL).

// notReadySince is when node n, not Ready now, stopped being Ready as this
// server can tell at now: now if it saw the change itself (live), else
// the Ready condition's lastTransitionTime, no later than now.
func notReadySince(n *corev1.Node, live bool, now time.Time) time.Time {
	if live {
		return now
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Time.Before(now) {
			return c.LastTransitionTime.Time
		}
	}
	return now
}

// nodeLate reports how long a node has been not Ready at now (since
// notReadySince) and whether its tasks are lost: past grace, and past a
// heartbeat TTL of this leader's term (elected; zero: no bound).
func nodeLate(since, now, elected time.Time, grace, ttl time.Duration) (time.Duration, bool) {
	d := now.Sub(since)
	return d, d >= grace && !now.Before(elected.Add(ttl))
}

// noteNode records when a Node stopped being Ready (old is its previous
// version, nil when first seen).
func (b *Backend) noteNode(old, o any) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if NodeReady(n) {
		delete(b.notReady, n.Name)
		return
	}
	if _, ok := b.notReady[n.Name]; !ok {
		prev, _ := old.(*corev1.Node)
		b.notReady[n.Name] = notReadySince(n, prev != nil && NodeReady(prev), b.cfg.Now())
	}
}

// noteNodeGone records a deleted Node as not Ready from now on, unless it
// was not Ready already.
func (b *Backend) noteNodeGone(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.notReady[n.Name]; !ok {
		b.notReady[n.Name] = b.cfg.Now()
	}
}

// termStart is when this server's term of leadership began (zero when
// unknown), whether it leads, and the tasks' heartbeat TTL (0 when
// unknown).
func (b *Backend) termStart() (time.Time, bool, time.Duration) {
	if b.cfg.Host == nil {
		return time.Time{}, true, 0
	}
	since, leads := b.cfg.Host.LeadingSince()
	return since, leads, b.cfg.Host.HeartbeatTTL()
}
