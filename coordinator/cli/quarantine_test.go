package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// node list shows quarantined accelerators; node release returns them.
func TestNodeRelease(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: command, command: [true], name: gpu, resources: {accelerators: {type: A100, count: 2}}}`))
	e.Store.Schedule(t, apitest.T0)
	var tk *structs.Task
	e.Store.Read(func(s *state.State) {
		for _, x := range s.Tasks {
			tk = x
		}
	})
	require.NotNil(t, tk)
	require.Equal(t, structs.NodeID("g2"), tk.Node)
	e.Store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{{Task: tk.ID, State: structs.TaskFailed, ExitCode: 3,
		Reason: structs.ReasonPreflightFailed, Message: "gpu preflight failed: count: 1 GPUs visible, 2 allocated", Time: apitest.T0}}})

	assert.Contains(t, must(t, e, "u1", "node", "list"), ""+
		"NAME  CLUSTER  POOL        STATE  CPU   MEMORY   ACCELERATORS  DEVICES  QUARANTINED  TASKS  TAGS\n"+
		"c1    local    public      ready  0/64  0/256Gi  -             -        -            0      -\n"+
		"g1    local    perception  ready  0/96  0/768Gi  A100 0/8      -        -            0      A100\n"+
		"g2    local    public      ready  0/96  0/768Gi  A100 0/8      -        0,1          0      A100\n")
	var nl wire.NodeList
	require.NoError(t, json.Unmarshal([]byte(must(t, e, "u1", "node", "list", "-o", "json")), &nl))
	require.Len(t, nl.Nodes, 3)
	assert.Equal(t, []structs.Quarantine{
		{Accel: 0, Reason: "gpu preflight failed: count: 1 GPUs visible, 2 allocated", Since: apitest.T0, Task: tk.ID},
		{Accel: 1, Reason: "gpu preflight failed: count: 1 GPUs visible, 2 allocated", Since: apitest.T0, Task: tk.ID},
	}, nl.Nodes[2].Quarantined)

	_, err := run(t, e, "u1", "node", "release", "g2")
	assert.ErrorContains(t, err, "is for admins")
	_, err = run(t, e, "admin", "node", "release", "--accelerators", "1,x", "g2")
	assert.ErrorContains(t, err, `--accelerators: "x" is not an accelerator index: use comma-separated indices from 0, such as 0,1`)
	_, err = run(t, e, "admin", "node", "release", "--accelerators", "99", "g2")
	assert.ErrorContains(t, err, "node g2: accelerator 99 is not allowed: use 0 to 7", "the node's own range, not any node's")
	_, err = run(t, e, "admin", "node", "release", "--accelerators", "8", "g2")
	assert.ErrorContains(t, err, "node g2: accelerator 8 is not allowed: use 0 to 7")
	_, err = run(t, e, "admin", "node", "release", "g9")
	assert.ErrorContains(t, err, "node g9")
	assert.Equal(t, "node g2: released accelerators 1; still quarantined: 0\n", must(t, e, "admin", "node", "release", "--accelerators", "1", "g2"))
	assert.Equal(t, "node g2: accelerators 1 were not quarantined: nothing released; quarantined: 0\n", must(t, e, "admin", "node", "release", "--accelerators", "1", "g2"))
	assert.Equal(t, "node g2: released accelerators 0; still quarantined: none\n", must(t, e, "admin", "node", "release", "g2"))
	assert.Equal(t, "node g2 has no quarantined accelerators: nothing released\n", must(t, e, "admin", "node", "release", "g2"))
	out := must(t, e, "admin", "node", "release", "-o", "json", "g2")
	assert.JSONEq(t, `[]`, string(mustField(t, out, "released")))
}

func mustField(t *testing.T, js, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(js), &m))
	return m[field]
}
