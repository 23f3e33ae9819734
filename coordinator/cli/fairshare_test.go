package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	st "github.com/atom-sched/atom/pkg/sched/schedtest"
	"github.com/atom-sched/atom/pkg/structs"
)

// quota get shows a scope's fair share; job why a waiting job's place in
// the queue and its scope's position; quota set --weight changes only the
// weight.
func TestFairShareCommands(t *testing.T) {
	e := apitest.NewEnv(t, "")
	start := apitest.T0.Add(-2 * time.Hour)
	e.Store.Must(t, &state.UsageAccrue{Now: start})
	j := st.NewJob("big", "u1").GPU("A100", 8).Obj()
	j.ID = "big-1"
	e.Store.Must(t, &state.JobSubmit{Job: j, Now: start})
	require.Equal(t, []structs.JobID{"big-1"}, e.Store.Schedule(t, start).Placed)
	for _, tk := range e.Store.Tasks("big-1") {
		e.Store.Report(t, tk.ID, structs.TaskSucceeded, start.Add(time.Hour))
	}
	e.Store.Must(t, &state.UsageAccrue{Now: start.Add(time.Hour)})

	small := func(name string) string {
		return file(t, `{kind: command, name: `+name+`, command: [true], resources: {accelerators: {type: A100, count: 1}}}`)
	}
	must(t, e, "u1", "job", "submit", "-f", small("a"))
	must(t, e, "u1", "job", "submit", "-f", small("b"))
	must(t, e, "u2", "job", "submit", "-f", small("c"))
	assert.Equal(t, ""+
		"c-00003: Pending\n"+
		"pending: the scheduler has not looked at this job yet\n"+
		"queue: 1st of 3 normal jobs waiting in public; user:u2 is at 0% of its fair share\n",
		must(t, e, "u2", "job", "why", "c-00003"))
	assert.Equal(t, ""+
		"b-00002: Pending\n"+
		"pending: the scheduler has not looked at this job yet\n"+
		"queue: 3rd of 3 normal jobs waiting in public; user:u1 is at 200% of its fair share\n",
		must(t, e, "u1", "job", "why", "b-00002"))
	assert.Equal(t, ""+
		"SCOPE    RESOURCE  USED  LIMIT\n"+
		"user:u1  cpu       0     32\n"+
		"user:u1  gpu/A100  2     8\n"+
		"user:u1  memory    0     128Gi\n"+
		"\n"+
		"SCOPE    WEIGHT  FAIR SHARE  USAGE (DECAYED)  OF ALL USAGE  POSITION\n"+
		"user:u1  1       50%         8.0 GPU-h        100%          200%\n",
		must(t, e, "u1", "quota", "get", "user:u1"))

	assert.Equal(t, "quota for user:u2 set: cpu=32 gpu/A100=8 memory=128Gi\n", must(t, e, "admin", "quota", "set", "--weight", "3", "user:u2"))
	assert.Contains(t, must(t, e, "u1", "job", "why", "a-00001"), "queue: 2nd of 3 normal jobs waiting in public; user:u1 is at 400% of its fair share\n")
	assert.Contains(t, must(t, e, "u2", "quota", "get", "user:u2"), "user:u2  3       75%         0.0 GPU-h        0%            0%\n")
	// A scope with no quota and no usage has no share to show (it read
	// 33%, its share were it to compete with u1 and u2).
	assert.Equal(t, ""+
		"SCOPE        RESOURCE                  USED  LIMIT\n"+
		"user:nobody  (none: every limit is 0)  -     -\n"+
		"\n"+
		"SCOPE        WEIGHT  FAIR SHARE  USAGE (DECAYED)  OF ALL USAGE  POSITION\n"+
		"user:nobody  1       -           0.0 GPU-h        -             -\n",
		must(t, e, "admin", "quota", "get", "user:nobody"))
	_, err := run(t, e, "admin", "quota", "set", "--weight", "-1", "user:u2")
	assert.ErrorContains(t, err, "weight -1 is not allowed: use a number above 0")
	_, err = run(t, e, "admin", "quota", "set", "user:u2")
	assert.ErrorContains(t, err, "give the quota spec (-f FILE), or --weight W and the scope")
}
