package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterTopology(t *testing.T) {
	t.Parallel()
	cfg, err := ParseClusterConfig([]byte(`
topology: {levels: [topology.kubernetes.io/zone, block, rack]}
clusters:
  - {name: a, backend: local}
  - {name: b, backend: local, topology: {levels: [rack]}}
nodes:
  - {name: n1, cluster: a, cpu: 8, memory: 8Gi, tags: {topology.kubernetes.io/zone: z1, block: b1, rack: r1}}
`))
	require.NoError(t, err)
	assert.Equal(t, &Topology{Levels: []string{"topology.kubernetes.io/zone", "block", "rack"}}, cfg.Clusters[0].Topology)
	assert.Equal(t, &Topology{Levels: []string{"rack"}}, cfg.Clusters[1].Topology)

	cases := []struct{ name, spec, want string }{
		{"no levels", "clusters: [{name: a, topology: {levels: []}}]", `clusters[0].topology.levels 0 is not allowed: name 1 to 8 node labels, widest first, such as [zone, block, rack]`},
		{"bad label", "topology: {levels: [zone, 'rack!']}", `topology.levels[1] "rack!" is not allowed: use a node label key such as rack or topology.kubernetes.io/zone`},
		{"twice", "topology: {levels: [topology.kubernetes.io/zone, zone]}", `topology.levels[1] "zone" is not allowed: levels must be unique, also after the last '/' (jobs name them so)`},
		{"unknown field", "topology: {level: [zone]}", "level is not a known field (did you mean levels?): use levels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseClusterConfig([]byte(tc.spec))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestJobTopology(t *testing.T) {
	t.Parallel()
	base := "kind: mpi\nname: j\nreplicas: 2\nresources: {accelerators: {type: A, count: 8}}\n"
	s, err := ParseJobSpec([]byte(base + "topology: {required: rack}\n"))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	assert.Equal(t, &JobTopology{Required: "rack"}, j.Topology)
	assert.Equal(t, "rack", j.Topology.Level())

	cases := []struct{ name, spec, want string }{
		{"both", base + "topology: {required: rack, preferred: zone}", `topology.preferred "zone" is not allowed: give required or preferred, not both`},
		{"none", base + "topology: {}", "topology names no level: give required: LEVEL or preferred: LEVEL, such as required: rack"},
		{"bad level", base + "topology: {preferred: 'a b'}", `topology.preferred "a b" is not allowed: name one of the cluster's topology levels`},
		{"service", "kind: service\nname: s\nreplicas: 2\nresources: {cpu: 1}\ntopology: {required: rack}", `topology.required "rack" is not allowed: topology keeps replicas that start together in one domain: it applies to mpi and spark jobs and to command jobs of more than one replica, not to a service of 2 replica(s)`},
		{"one command", "kind: command\nname: c\nresources: {cpu: 1}\ntopology: {required: rack}", "not to a command of 1 replica(s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseJobSpec([]byte(tc.spec))
			assert.ErrorContains(t, err, tc.want)
		})
	}
	assert.Equal(t, 2, LevelIndex([]string{"topology.kubernetes.io/zone", "block", "rack"}, "rack"))
	assert.Equal(t, 0, LevelIndex([]string{"topology.kubernetes.io/zone", "block", "rack"}, "zone"))
	assert.Equal(t, 0, LevelIndex([]string{"topology.kubernetes.io/zone"}, "topology.kubernetes.io/zone"))
	assert.Equal(t, -1, LevelIndex([]string{"rack"}, "zone"))
}
