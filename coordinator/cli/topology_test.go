package cli

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
)

// racks is a cluster with topology levels zone and rack: rack r1 (g1,
// g2) and r2 (g3) in zone z1, and an unlabelled node g4.
const racks = `
topology: {levels: [topology.kubernetes.io/zone, rack]}
clusters: [{name: local}]
nodes:
- {name: g1, cpu: 96, memory: 768Gi, accelerators: {type: A100, count: 8}, tags: {topology.kubernetes.io/zone: z1, rack: r1}}
- {name: g2, cpu: 96, memory: 768Gi, accelerators: {type: A100, count: 8}, tags: {topology.kubernetes.io/zone: z1, rack: r1}}
- {name: g3, cpu: 96, memory: 768Gi, accelerators: {type: A100, count: 8}, tags: {topology.kubernetes.io/zone: z1, rack: r2}}
- {name: g4, cpu: 96, memory: 768Gi, accelerators: {type: A100, count: 8}}
quotas:
- {scope: "user:u1", limits: {gpu/A100: 64}}
`

// Through the CLI and the API: the nodes' domains, a gang that requires a
// rack placed in one, one that must wait told which racks come closest,
// and a level the cluster lacks refused at submit.
func TestTopologyCommands(t *testing.T) {
	e := apitest.NewEnv(t, racks)
	assert.Equal(t, ""+
		"NAME   BACKEND  REDIS  TOPOLOGY\n"+
		"local  local    -      topology.kubernetes.io/zone,rack\n",
		must(t, e, "u1", "cluster", "list"))
	assert.Equal(t, ""+
		"NAME  CLUSTER  POOL    STATE  CPU   MEMORY   ACCELERATORS  DEVICES  QUARANTINED  TASKS  DOMAINS          TAGS\n"+
		"g1    local    public  ready  0/96  0/768Gi  A100 0/8      -        -            0      zone=z1,rack=r1  rack=r1,topology.kubernetes.io/zone=z1\n"+
		"g2    local    public  ready  0/96  0/768Gi  A100 0/8      -        -            0      zone=z1,rack=r1  rack=r1,topology.kubernetes.io/zone=z1\n"+
		"g3    local    public  ready  0/96  0/768Gi  A100 0/8      -        -            0      zone=z1,rack=r2  rack=r2,topology.kubernetes.io/zone=z1\n"+
		"g4    local    public  ready  0/96  0/768Gi  A100 0/8      -        -            0      -                -\n",
		must(t, e, "u1", "node", "list"))
	out := must(t, e, "u1", "node", "list", "-o", "json")
	assert.Contains(t, out, `"domains": [`)
	assert.Contains(t, out, `"level": "topology.kubernetes.io/zone"`)

	gang := `{kind: mpi, command: [true], name: %s, replicas: %d, resources: {accelerators: {type: A100, count: 8}}, topology: {%s: %s}}`
	assert.Equal(t, "job a-00001 submitted: Pending\n", must(t, e, "u1", "job", "submit", "-f", file(t, fmt.Sprintf(gang, "a", 2, "required", "rack"))))
	e.Store.Schedule(t, apitest.T0)
	var nodes []structs.NodeID
	for _, tk := range e.Store.Tasks("a-00001") {
		nodes = append(nodes, tk.Node)
	}
	assert.ElementsMatch(t, []structs.NodeID{"g1", "g2"}, nodes)

	must(t, e, "u1", "job", "submit", "-f", file(t, fmt.Sprintf(gang, "b", 2, "required", "zone")))
	e.Store.Schedule(t, apitest.T0)
	out = must(t, e, "u1", "job", "why", "b-00002")
	assert.Contains(t, out, "does not fit now; gang needs 2 replicas: 1 fit now, at most 2 on empty nodes; needs 2 replicas in one zone: zone z1 has 1 free (of 3)")
	assert.Contains(t, out, "1      in no zone (without its label)")

	_, err := run(t, e, "u1", "job", "submit", "-f", file(t, fmt.Sprintf(gang, "c", 2, "preferred", "block")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topology.preferred: unknown topology level "block": cluster local has levels topology.kubernetes.io/zone, rack (an admin sets them under topology.levels in the cluster spec)`)

	// An admin gives the cluster a block level: now it may be asked for.
	assert.Equal(t, "cluster local set: topology levels topology.kubernetes.io/zone removed, block added\n", must(t, e, "admin", "cluster", "set", "-f", file(t, "name: local\ntopology: {levels: [block, rack]}\n")))
	must(t, e, "u1", "job", "submit", "-f", file(t, fmt.Sprintf(gang, "c", 1, "preferred", "block")))
}
