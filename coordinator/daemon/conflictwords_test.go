package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
)

// A refusal for something that exists says so once, in its own words,
// with no ": already exists" tacked on; a request ID it names is the one
// the client sent, without the user the server keys it by ("dev/").
func TestConflictsSayItOnce(t *testing.T) {
	d, _ := startDev(t)
	c := client.New(d.URL, adminToken)
	ctx := context.Background()
	spec := []byte("kind: command\nname: hello\ncommand: [sleep, '1000']\nresources: {cpu: 1, memory: 1Gi}\n")
	var id string
	require.Eventually(t, func() bool { // the cluster config lands right after start
		r, err := c.SubmitJob(ctx, spec, "req-1")
		if err == nil {
			id = string(r.JobID)
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)

	_, err := c.SubmitJob(ctx, []byte("kind: command\nname: other\ncommand: [true]\nresources: {cpu: 1, memory: 1Gi}\n"), "req-1")
	require.ErrorIs(t, err, client.ErrConflict)
	assert.EqualError(t, err, `request ID "req-1" was used for job `+id+` (hello): this spec differs in name: use a new request ID for a new job`)

	_, err = c.SubmitJob(ctx, spec, "req-2")
	require.ErrorIs(t, err, client.ErrConflict)
	// The job may be pending, scheduled or running by now.
	assert.Regexp(t, `^job name hello is taken by user dev's active job `+id+` \(\w+\): a name is unique among a user's \(or a project's\) jobs that have not ended; cancel it, wait for it to end, or choose another name$`, err.Error())

	_, err = c.SetPool(ctx, []byte("{name: p1, project: vision}"))
	require.NoError(t, err)
	_, err = c.SetPool(ctx, []byte("{name: p2, project: vision}"))
	require.ErrorIs(t, err, client.ErrConflict)
	assert.EqualError(t, err, "pool p2: project vision already has pool p1, and a project has one pool: set p1 instead, or delete it first")
}
