package structs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
)

func TestMPISection(t *testing.T) {
	spec, err := structs.ParseJobSpec([]byte("kind: mpi\nname: ar\nresources: {cpu: 1}\nreplicas: 2\ncommand: [./allreduce]\nmpi: {slotsPerReplica: 2, mpirunArgs: [-x, NCCL_DEBUG], startTimeout: 90s}\n"))
	require.NoError(t, err)
	j, err := spec.ToJob("u1")
	require.NoError(t, err)
	assert.Equal(t, &structs.MPIOptions{SlotsPerReplica: 2, MpirunArgs: []string{"-x", "NCCL_DEBUG"}, StartTimeout: structs.Duration(90 * time.Second)}, j.MPI)

	for name, c := range map[string]struct{ spec, err string }{
		"wrong kind":  {"kind: command\nname: a\nresources: {cpu: 1}\ncommand: [x]\nmpi: {slotsPerReplica: 2}\n", "mpi is only for kind mpi; this job is kind command"},
		"zero slots":  {"kind: mpi\nname: a\nresources: {cpu: 1}\nmpi: {slotsPerReplica: 0}\n", "mpi.slotsPerReplica 0 is not allowed: use 1 to 1024 ranks"},
		"owned -np":   {"kind: mpi\nname: a\nresources: {cpu: 1}\nmpi: {mpirunArgs: [-np, '4']}\n", `mpi.mpirunArgs "-np" is not allowed: atom sets the hostfile, the rank count (replicas × slotsPerReplica) and the launch agent itself`},
		"owned agent": {"kind: mpi\nname: a\nresources: {cpu: 1}\nmpi: {mpirunArgs: [--mca, plm_rsh_agent, ssh]}\n", `mpi.mpirunArgs "plm_rsh_agent" is not allowed: atom sets the hostfile, the rank count (replicas × slotsPerReplica) and the launch agent itself`},
		"bad timeout": {"kind: mpi\nname: a\nresources: {cpu: 1}\nmpi: {startTimeout: soon}\n", `mpi.startTimeout "soon" is not allowed: use a duration such as 90s, 30m or 2h, from 1s to 168h (7 days)`},
		"unknown":     {"kind: mpi\nname: a\nresources: {cpu: 1}\nmpi: {slots: 2}\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := structs.ParseJobSpec([]byte(c.spec))
			require.Error(t, err)
			if c.err != "" {
				assert.EqualError(t, err, c.err)
			} else {
				assert.Contains(t, err.Error(), "slots")
			}
		})
	}
}
