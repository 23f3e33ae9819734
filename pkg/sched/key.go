package sched

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// input is one thing about a job that rules, or the explanation around
// them, read. Jobs whose contexts agree on every input the rules that
// apply to them read ask the same question, and share one answer (whyKey).
type input uint16

const (
	inCluster     input = 1 << iota // the cluster it is pinned to
	inCache                         // whether it mounts the dataset cache
	inOnly                          // the clusters its volumes allow
	inPools                         // the pools it may use, in order
	inResources                     // what one replica asks
	inNode                          // the node it is pinned to
	inTolerations                   // its tolerations
	inSelector                      // its node selector
	inPriority                      // its priority (whose reservations bind it)
	inReplicas                      // how many replicas, at least how many at once, whether a gang
	inSpark                         // a spark job's minimum executors and what each asks and where
	inLive                          // its live replicas: not keyed when it has any
	inHolds                         // its own reservations: not keyed when it has any
	inOwn                           // the job itself (affinity to other jobs): never keyed
	inTopology                      // its topology, and the domain it is held to
)

// explainReads is what the explanation reads beside the rules: how many
// replicas it needs (live ones aside), whose reservations it is behind,
// how many replicas fit a node when spread, and a spark job's executors.
const explainReads = inReplicas | inLive | inPriority | inSpark | inResources

// whyKey appends to buf the question c asks in mode m: the mode, the rules
// that apply to c, and every input they (and the explanation) read. ok is
// false when the answer is c's own (it has live replicas or reservations,
// or affinity to other jobs): then it is not shared.
func (w *world) whyKey(buf []byte, c *jobCtx, m mode) (key []byte, ok bool) {
	set := c.rules & modeRules[m]
	reads := explainReads
	if set&(1<<rSpread) == 0 && c.rules&(1<<rSpread) != 0 {
		reads |= inLive // counted in slots even where the mode does not ask it
	}
	buf = append(buf, byte(m))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(c.rules))
	for s := set; s != 0; {
		reads |= rules[s.next()].reads
	}
	j := c.j
	for in := input(1); in != 0 && in <= reads; in <<= 1 {
		if reads&in == 0 {
			continue
		}
		switch in {
		case inCluster:
			buf = appendString(buf, string(j.Cluster))
		case inCache:
			buf = appendBool(buf, j.CacheMountPath != "")
		case inOnly:
			for _, b := range c.only {
				buf = appendBool(buf, b)
			}
			buf = append(buf, 2)
		case inPools:
			buf = binary.AppendUvarint(buf, uint64(len(c.pools)))
			for _, p := range c.pools {
				buf = binary.AppendVarint(buf, int64(p))
			}
		case inResources:
			r := c.shape.Resources
			buf = binary.AppendVarint(buf, r.MilliCPU)
			buf = binary.AppendVarint(buf, r.Memory)
			buf = binary.AppendVarint(buf, r.Accels)
			buf = appendString(buf, r.AccelType)
			buf = binary.AppendUvarint(buf, uint64(len(r.Devices)))
			if len(r.Devices) > 0 {
				for _, d := range slices.Sorted(maps.Keys(r.Devices)) {
					buf = appendString(buf, d)
					buf = binary.AppendVarint(buf, r.Devices[d])
				}
			}
		case inNode:
			buf = appendString(buf, string(j.NodeName))
		case inTolerations:
			if len(j.Tolerations) > 0 {
				buf = appendString(buf, fmt.Sprint(j.Tolerations))
			} else {
				buf = append(buf, 0)
			}
		case inSelector:
			buf = appendString(buf, j.Selector)
		case inPriority:
			buf = binary.AppendVarint(buf, int64(j.Priority))
		case inReplicas:
			buf = binary.AppendVarint(buf, int64(c.shape.Replicas))
			buf = binary.AppendVarint(buf, int64(j.MinAvailable))
			buf = appendBool(buf, j.IsGang())
		case inSpark:
			if j.Spark == nil || j.Kind != structs.KindSpark {
				buf = append(buf, 0)
				break
			}
			buf = binary.AppendVarint(buf, int64(j.Spark.MinExecutors()))
			if j.Spark.MinExecutors() > 0 {
				ej := w.executorJob(j)
				buf = appendString(buf, fmt.Sprint(ej.Resources))
				buf = appendString(buf, ej.Selector)
				buf = appendString(buf, fmt.Sprint(j.Tolerations))
			}
		case inLive:
			if len(w.liveOf[j.ID]) > 0 {
				return buf, false
			}
		case inHolds:
			if w.hasHolds(j.ID, "") {
				return buf, false
			}
		case inOwn:
			return buf, false
		case inTopology:
			if t := j.Topology; t != nil {
				buf = appendString(buf, t.Required)
				buf = appendString(buf, t.Preferred)
			} else {
				buf = append(buf, 0, 0)
			}
			buf = binary.AppendVarint(buf, int64(c.dom))
		}
	}
	return buf, true
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendBool(buf []byte, b bool) []byte {
	if b {
		return append(buf, 1)
	}
	return append(buf, 0)
}
