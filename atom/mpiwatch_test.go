package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/plugins/mpi"
	"github.com/atom-sched/atom/test/testlog"
)

// mpirun's stderr reaches atom's unchanged and at once (a line not ended
// yet included), and its report names the failed rank's replica.
func TestMPIWatchPassesStderrThrough(t *testing.T) {
	var out testlog.Buffer
	l := mpi.Layout{Mapped: true, Slots: 2, Replicas: []mpi.Replica{
		{Index: 0, Task: "j-0-aa", Node: "cpu-1", Host: "localhost"},
		{Index: 1, Task: "j-1-bb", Node: "cpu-2", Host: "j-1-bb"},
	}}
	m, err := newMPIWatch(l, &out)
	require.NoError(t, err)
	mpirun := m.w // what mpirun would hold
	_, err = mpirun.WriteString("rank 3 fails: exit 7\nepoch 12 loss=0.4")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return out.String() == "rank 3 fails: exit 7\nepoch 12 loss=0.4" },
		10*time.Second, 5*time.Millisecond, "a partial line is passed on without waiting for its end")

	report := "1\n--------------------------------------------------------------------------\n" +
		"mpirun detected that one or more processes exited with non-zero status, thus causing\n" +
		"the job to be terminated. The first process to do so was:\n\n  Process name: [[20790,1],3]\n  Exit code:    7\n" +
		strings.Repeat("-", 74) + "\n"
	_, err = mpirun.WriteString(report)
	require.NoError(t, err)
	m.started() // mpirun's end closes the last write end
	assert.Equal(t, "MPI rank 3 exited with code 7 on replica 1 (task j-1-bb, node cpu-2)", m.explain())
	assert.Equal(t, "rank 3 fails: exit 7\nepoch 12 loss=0.4"+report, out.String())
}

// No report (mpirun succeeded, or said nothing): nothing to add.
func TestMPIWatchNoReport(t *testing.T) {
	var out testlog.Buffer
	m, err := newMPIWatch(mpi.Layout{}, &out)
	require.NoError(t, err)
	_, err = m.w.WriteString("sum=10 size=4\n")
	require.NoError(t, err)
	m.started()
	assert.Equal(t, "", m.explain())
	assert.Equal(t, "sum=10 size=4\n", out.String())
}
