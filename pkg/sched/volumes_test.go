package sched_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A persistent volume is mounted read-write by one job at a time; read-only
// by any number, but not while one writes it. A job that would break this
// waits, and says for what.
func TestVolumeOneWriter(t *testing.T) {
	h := st.New(t, st.G8("g1", "A"), st.G8("g2", "A"), st.G8("g3", "A"), st.G8("g4", "A"))
	h.Quota(u1, structs.ResourceList{"gpu/A": 32})
	job := func(id string, vols ...structs.Volume) *structs.Job {
		j := st.NewJob(id, "u1").GPU("A", 8).Obj()
		j.Volumes = vols
		return j
	}
	rw := structs.Volume{Name: "data", Claim: "imagenet", MountPath: "/data"}
	ro := structs.Volume{Name: "data", Claim: "imagenet", MountPath: "/data", ReadOnly: true}
	other := structs.Volume{Name: "out", Claim: "results", MountPath: "/out"}

	// Two writers in one cycle: the first (oldest) mounts it, the second waits.
	h.MustSubmit(job("w1", rw))
	h.Advance(1)
	h.MustSubmit(job("w2", rw, other))
	h.Advance(1)
	h.MustSubmit(job("r1", ro))
	h.Advance(1)
	h.MustSubmit(job("o1", other))
	h.Cycle()
	assert.Len(t, h.Tasks("w1"), 1)
	assert.Empty(t, h.Tasks("w2"))
	assert.Equal(t, "waits for volume imagenet: job w1 mounts it read-write (one job at a time)", h.Why("w2").Message)
	assert.Empty(t, h.Tasks("r1"))
	assert.Equal(t, "waits for volume imagenet: job w1 mounts it read-write (one job at a time)", h.Why("r1").Message)
	assert.Len(t, h.Tasks("o1"), 1, "another volume is free")

	// w1 ends: w2 still waits, for results now (o1 writes it); r1 reads.
	h.Finish("w1", structs.JobSucceeded)
	h.Cycle()
	assert.Empty(t, h.Tasks("w2"))
	assert.Equal(t, "waits for volume results: job o1 mounts it read-write (one job at a time)", h.Why("w2").Message)
	assert.Len(t, h.Tasks("r1"), 1)

	// o1 ends: w2 may not write imagenet while r1 reads it.
	h.Finish("o1", structs.JobSucceeded)
	h.Cycle()
	assert.Empty(t, h.Tasks("w2"))
	assert.Equal(t, "waits for volume imagenet: job r1 mounts it read-only, and a volume is written by one job while no other mounts it", h.Why("w2").Message)
	h.Finish("r1", structs.JobSucceeded)
	h.Cycle()
	assert.Len(t, h.Tasks("w2"), 1)
}
