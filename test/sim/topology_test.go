package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// The node list's racks: each model's nodes in file order, 8 to a rack, 4
// racks to a block.
func TestTopologyRacks(t *testing.T) {
	rows, err := loadNodes("testdata")
	require.NoError(t, err)
	nodes := toNodes(rows)
	schedtest.Racks(nodes, 8, 4)
	racks := map[string][]*structs.Node{}
	blocks := map[string]map[string]bool{}
	for _, n := range nodes {
		r, b := n.Tags["rack"], n.Tags["block"]
		racks[r] = append(racks[r], n)
		if blocks[b] == nil {
			blocks[b] = map[string]bool{}
		}
		blocks[b][r] = true
	}
	for r, ns := range racks {
		assert.LessOrEqual(t, len(ns), 8, r)
		for _, n := range ns {
			assert.Equal(t, ns[0].Capacity.AccelType, n.Capacity.AccelType, "rack %s is of one model", r)
		}
	}
	for b, rs := range blocks {
		assert.LessOrEqual(t, len(rs), 4, b)
	}
	// G2's 549 nodes: 68 full racks and one of 5.
	g2 := 0
	for _, ns := range racks {
		if ns[0].Capacity.AccelType == "G2" {
			g2++
		}
	}
	assert.Equal(t, 69, g2)
}

// tinyRacks is 12 8-GPU G2 nodes: racks of 8 and 4 (schedtest.Racks), and
// a template of one GPU running an hour.
func tinyRacks() ([]node, []*structs.Node, []template) {
	var rows []node
	for i := range 12 {
		rows = append(rows, node{Name: fmt.Sprintf("g%02d", i), MilliCPU: 96000, MemoryMiB: 786432, GPUs: 8, Model: "G2"})
	}
	nodes := toNodes(rows)
	schedtest.Racks(nodes, 8, 4)
	return rows, nodes, []template{{request: request{Name: "one", MilliCPU: 1000, Memory: 1 << 30, GPUs: 1}, Run: time.Hour}}
}

// A gang of 4 arriving after a single task: atom-topology puts it in the
// rack of 4 (best fit), whole, and the next of 7 in the other rack's 7
// whole nodes; every policy frees what departs.
func TestTopologyReplayPolicies(t *testing.T) {
	rows, nodes, tmpls := tinyRacks()
	jobs := []topoJob{
		{At: 0, Run: time.Hour, Tmpl: 0},
		{At: time.Minute, Run: time.Hour, Replicas: 4, Model: "G2"},
		{At: 2 * time.Minute, Run: time.Hour, Replicas: 7, Model: "G2"},
		{At: 3 * time.Hour, Run: time.Hour, Replicas: 11, Model: "G2"},
	}
	full := func(p topoPlacer) []string { // the racks of the nodes p has filled
		var out []string
		for i, n := range nodes {
			if p.free(i) == 0 {
				out = append(out, n.Tags["rack"])
			}
		}
		return out
	}
	at := newAtomTopo(nodes, tmpls, coreSchedule, true)
	got, err := at.place(0, &jobs[0])
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = at.place(1, &jobs[1])
	require.NoError(t, err)
	assert.Equal(t, []string{"r0002", "r0002", "r0002", "r0002"}, full(at))
	at.depart(1)
	assert.Empty(t, full(at))

	for _, p := range topologyPolicies {
		var pl topoPlacer
		if p == policyBestFit {
			b, err := newBaseline(p, rows, 1)
			require.NoError(t, err)
			pl = &bestFitTopo{b: b, tmpls: tmpls, placed: map[int][]placement{}}
		} else {
			pl = newAtomTopo(nodes, tmpls, coreSchedule, p == policyAtomTopology)
		}
		res, err := replayTopology(pl, p, 1, append([]topoJob(nil), jobs...), tmpls, nodes)
		require.NoError(t, err, p)
		// The gangs of 4 and 7 are placed (the single task leaves 7 whole
		// nodes in r0001), 11 at 3h too (all departed).
		assert.Equal(t, 3, res.Placed, p)
		if p == policyAtomTopology {
			assert.Equal(t, 2, res.Room, p)
			assert.Equal(t, 2, res.OneRack, p)
		}
	}
}
