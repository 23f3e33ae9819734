package kube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
)

// TestPodArgsAndEnvLiteral: the kubelet expands $(VAR) and $$ in a
// container's args and env values; a task Pod doubles every $, so the job
// gets its command and variables as written.
func TestPodArgsAndEnvLiteral(t *testing.T) {
	b := &kube.Backend{}
	task := &structs.Task{ID: "j-0-ab12", Node: "n"}
	job := &structs.Job{ID: "j", Kind: structs.KindCommand, Image: "img",
		Command: []string{"sh", "-c", `echo $$ $(HOME) $1 $`}, Env: map[string]string{"A": "$(B)$$"}}
	p, err := b.Pod(task, job)
	require.NoError(t, err)
	c := p.Spec.Containers[0]
	assert.Equal(t, []string{"run", "--", "sh", "-c", `echo $$$$ $$(HOME) $$1 $$`}, c.Args)
	require.Equal(t, "A", c.Env[0].Name)
	assert.Equal(t, "$$(B)$$$$", c.Env[0].Value)
	assert.Contains(t, b.LaunchEnv(task, job)["ATOM_JOB_SPEC"], `echo $$ $(HOME) $1 $`, "the job spec as written: fetched, not expanded by the kubelet")
}
