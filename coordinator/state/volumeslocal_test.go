package state_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// A job with volumes or scratch space is refused at submit by a
// coordinator with no kubernetes cluster: local clusters mount neither,
// and the job ran without them, losing what it wrote there.
func TestVolumesNeedAKubernetesCluster(t *testing.T) {
	l := newLogged(t, st.C64("c1"))
	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "a", Backend: "local"}})
	ckpt := job("ckpt-1", st.NewJob("ckpt", "u1").Low().CPU(1, 1))
	ckpt.Volumes = []structs.Volume{{Name: "ckpt", Claim: "ckpt", MountPath: "/ckpt"}}
	_, err := l.do(&state.JobSubmit{Job: ckpt, Now: t0})
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.EqualError(t, err, "volumes: this coordinator has no kubernetes cluster, and local clusters mount no volumes or scratch space: "+
		"the job would run without them; leave volumes out, or run it where a kubernetes cluster is (coordinator/README.md, Persistent volumes)")
	assert.Empty(t, l.s.Jobs, "nothing was made")

	l.must(&state.ClusterUpsert{Cluster: &structs.Cluster{Name: "k", Backend: "kubernetes"}})
	l.must(&state.JobSubmit{Job: ckpt, Now: t0})
	assert.Contains(t, l.s.Jobs, structs.JobID("ckpt-1"))
}
