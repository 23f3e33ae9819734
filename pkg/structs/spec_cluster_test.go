package structs

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestQuotaSpec(t *testing.T) {
	t.Parallel()
	q, err := ParseQuotaSpec([]byte(`
scope: user:u1
limits: {cpu: "64", memory: 256Gi, gpu/A100: 8, gpu: 4, device/jetson-xavier: 2, gpu/T4: 0}
`))
	require.NoError(t, err)
	assert.Equal(t, &Quota{Scope: "user:u1", Limits: ResourceList{
		KeyCPU: 64000, KeyMemory: 256 * gi, "gpu/A100": 8, KeyGPUAny: 4, "device/jetson-xavier": 2, "gpu/T4": 0,
	}}, q)

	q, err = ParseQuotaSpec([]byte(`{"scope": "project:p1"}`))
	require.NoError(t, err)
	assert.Equal(t, &Quota{Scope: "project:p1", Limits: ResourceList{}}, q)
}

func TestQuotaSpecRejects(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, spec, want string }{
		{"C10 negative quota", "scope: user:u2\nlimits: {gpu/A: -8}", `limits["gpu/A"] "-8" is not allowed: use 0 or more`},
		{"negative cpu", "scope: user:u2\nlimits: {cpu: -1}", `limits["cpu"] "-1" is not allowed: use 0 or more`},
		{"fractional gpu", "scope: user:u2\nlimits: {gpu: 0.5}", `limits["gpu"] "0.5" is not allowed: use whole units`},
		{"overflowing memory", "scope: user:u2\nlimits: {memory: 16Ei}", `limits["memory"] "16Ei" is not allowed: it overflows 64 bits`},
		{"NaN", "scope: user:u2\nlimits: {cpu: .nan}", `limits["cpu"] NaN is not allowed: use a finite number`},
		{"bad key", "scope: user:u2\nlimits: {gpu/: 1}", `limits "gpu/" is not allowed: use cpu, memory, gpu, gpu/<type> or device/<type>`},
		{"bad scope", "scope: bob\nlimits: {cpu: 1}", `scope "bob" is not allowed: use user:<name> or project:<name>`},
		{"empty scope", "limits: {cpu: 1}", `scope "" is not allowed`},
		{"unknown field", "scope: user:u1\nlimit: {cpu: 1}", "limit is not a known field (did you mean limits?): use scope, limits"},
		{"empty", "", "quota spec is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseQuotaSpec([]byte(tc.spec))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNodeSpec(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, spec string
		want       *Node
	}{{
		name: "G8(A) with the default share",
		spec: "name: n1\ncpu: 96\nmemory: 768Gi\naccelerators: {type: A, count: 8}\ntags: {gpu: A, fabric: ib}",
		want: &Node{Name: "n1", State: NodeReady,
			Capacity: Resources{MilliCPU: 96000, Memory: 768 * gi, AccelType: "A", Accels: 8},
			Tags:     map[string]string{"gpu": "A", "fabric": "ib"}},
	}, {
		name: "A100 node with a configured share in a project pool",
		spec: `
name: gpu-07.dc1
cluster: dc1
pool: perception
state: draining
cpu: 56
memory: 944Gi
accelerators: {type: A100, count: 8}
cpuPerAccelerator: 6500m
memoryPerAccelerator: 110Gi
tags: {A100: ""}
taints: [{key: maint, value: "true", effect: NoSchedule}]
`,
		want: &Node{Name: "gpu-07.dc1", Cluster: "dc1", Pool: "perception", State: NodeDraining,
			Capacity:         Resources{MilliCPU: 56000, Memory: 944 * gi, AccelType: "A100", Accels: 8},
			MilliCPUPerAccel: 6500, MemoryPerAccel: 110 * gi, Tags: map[string]string{"A100": ""},
			Taints: []corev1.Taint{{Key: "maint", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
	}, {
		name: "edge node with devices",
		spec: "name: edge-01\ncpu: 12\nmemory: 48Gi\ndevices: {jetson-xavier: 2}",
		want: &Node{Name: "edge-01", State: NodeReady,
			Capacity: Resources{MilliCPU: 12000, Memory: 48 * gi, Devices: map[string]int64{"jetson-xavier": 2}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := ParseNodeSpec([]byte(tc.spec))
			require.NoError(t, err)
			assert.Equal(t, tc.want, n)
		})
	}
}

func TestNodeSpecRejects(t *testing.T) {
	t.Parallel()
	const g8 = "name: n1\ncpu: 96\nmemory: 768Gi\n"
	cases := []struct{ name, spec, want string }{
		{"no accelerator type", g8 + "accelerators: {count: 8}", `accelerators.type "" is not allowed: name the node's accelerator type`},
		{"65 accelerators", g8 + "accelerators: {type: A, count: 65}", "accelerators.count 65 is not allowed: use 1 to 64"},
		{"negative accelerators", g8 + "accelerators: {type: A, count: -8}", "accelerators.count -8 is not allowed"},
		{"cpu share too large", g8 + "accelerators: {type: A, count: 8}\ncpuPerAccelerator: 13",
			`cpuPerAccelerator "13" is not allowed: 8 accelerators would need more than the node's cpu 96`},
		{"memory share too large", g8 + "accelerators: {type: A, count: 8}\nmemoryPerAccelerator: 97Gi",
			`memoryPerAccelerator "97Gi" is not allowed: 8 accelerators would need more than the node's memory 768Gi`},
		{"bare-number memory share", g8 + "accelerators: {type: A, count: 8}\nmemoryPerAccelerator: 16",
			"memoryPerAccelerator 16 is too small: memory is in bytes unless it has a unit; did you mean 16Mi?"},
		{"zero share", g8 + "accelerators: {type: A, count: 8}\ncpuPerAccelerator: 0", `cpuPerAccelerator "0" is not allowed: use more than 0`},
		{"share without accelerators", g8 + "memoryPerAccelerator: 1Gi", `memoryPerAccelerator "1Gi" is not allowed: the node has no accelerators`},
		{"too little cpu to share", "name: n1\ncpu: 4m\nmemory: 1Gi\naccelerators: {type: A, count: 8}",
			"accelerators.count 8 is not allowed: the node's cpu (0.004) and memory (1Gi) must give each accelerator a share"},
		{"no cpu", "name: n1\nmemory: 1Gi", `cpu "" is not allowed`},
		{"zero memory", "name: n1\ncpu: 1\nmemory: 0", `memory "0" is not allowed: use more than 0`},
		{"negative memory", "name: n1\ncpu: 1\nmemory: -1Gi", `memory "-1Gi" is not allowed: use more than 0`},
		{"bad name", "name: N1\ncpu: 1\nmemory: 1Gi", `name "N1" is not allowed: use a node name`},
		{"bad state", g8 + "state: broken", `state "broken" is not allowed: use ready, not-ready, draining or quarantined`},
		{"zero devices", g8 + "devices: {xavier: 0}", `devices["xavier"] 0 is not allowed`},
		{"bad tag", g8 + "tags: {'a b': x}", `tags "a b" is not allowed: use a label key`},
		{"taint without effect", g8 + "taints: [{key: a}]", `taints[0].effect "" is not allowed: use NoSchedule, PreferNoSchedule or NoExecute`},
		{"taint without key", g8 + "taints: [{effect: NoSchedule}]", `taints[0].key "" is not allowed`},
		{"unknown field", g8 + "gpus: 8", "gpus is not a known field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseNodeSpec([]byte(tc.spec))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestPoolSpec(t *testing.T) {
	t.Parallel()
	p, err := ParsePoolSpec([]byte("name: perception\nproject: perception\nmembers: [u1, u2]\nlendIdle: true"))
	require.NoError(t, err)
	assert.Equal(t, &Pool{Name: "perception", Project: "perception", Members: []UserID{"u1", "u2"}, LendIdle: true}, p)

	p, err = ParsePoolSpec([]byte("name: public"))
	require.NoError(t, err)
	assert.True(t, p.IsPublic())
	p, err = ParsePoolSpec([]byte("name: public\nminRuntime: 10m"))
	require.NoError(t, err)
	assert.Equal(t, &Pool{Name: PublicPool, MinRuntime: Duration(10 * time.Minute)}, p)
	p, err = ParsePoolSpec([]byte("name: p1\nproject: p1\nminRuntime: 1h30m"))
	require.NoError(t, err)
	assert.Equal(t, Duration(90*time.Minute), p.MinRuntime)

	for _, tc := range []struct{ name, spec, want string }{
		{"project pool without project", "name: p1", "project is required"},
		{"public pool with a project", "name: public\nproject: p1", `project "p1" is not allowed: the public pool belongs to no project`},
		{"public pool with members", "name: public\nmembers: [u1]", "members are not allowed: the public pool is open to everyone"},
		{"public pool lending", "name: public\nlendIdle: true", "lendIdle true is not allowed"},
		{"member twice", "name: p1\nproject: p1\nmembers: [u1, u1]", `members[1] "u1" is not allowed: members must be unique`},
		{"bad member", "name: p1\nproject: p1\nmembers: ['u 1']", `members[0] "u 1" is not allowed`},
		{"minRuntime not a duration", "name: p1\nproject: p1\nminRuntime: 10", `minRuntime "10" is not allowed: use a duration from 0s to 24h, such as 10m (leave it out for none)`},
		{"minRuntime negative", "name: public\nminRuntime: -1m", `minRuntime "-1m" is not allowed`},
		{"minRuntime too long", "name: p1\nproject: p1\nminRuntime: 25h", `minRuntime "25h" is not allowed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePoolSpec([]byte(tc.spec))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// c10Config is the ten-GPU case's cluster: 2 × G8(A) and 1 × C64, u1 quota 8 A
// and 64 CPU.
const c10Config = `
clusters:
  - {name: local, redis: "127.0.0.1:6379"}
pools:
  - {name: perception, project: perception, members: [u1], lendIdle: true}
nodes:
  - {name: n1, cpu: 96, memory: 768Gi, accelerators: {type: A, count: 8}}
  - {name: n2, cpu: 96, memory: 768Gi, accelerators: {type: A, count: 8}}
  - {name: c1, cpu: 64, memory: 256Gi, pool: public}
quotas:
  - {scope: "user:u1", limits: {gpu/A: 8, cpu: 64}}
`

func TestClusterConfig(t *testing.T) {
	t.Parallel()
	cfg, err := ParseClusterConfig([]byte(c10Config))
	require.NoError(t, err)
	g8 := Resources{MilliCPU: 96000, Memory: 768 * gi, AccelType: "A", Accels: 8}
	assert.Equal(t, &ClusterConfig{
		Clusters: []Cluster{{Name: "local", Backend: "local", Redis: "127.0.0.1:6379"}},
		Pools:    []Pool{{Name: "perception", Project: "perception", Members: []UserID{"u1"}, LendIdle: true}},
		Nodes: []Node{
			{Name: "n1", Cluster: "local", State: NodeReady, Capacity: g8},
			{Name: "n2", Cluster: "local", State: NodeReady, Capacity: g8},
			{Name: "c1", Cluster: "local", Pool: PublicPool, State: NodeReady, Capacity: Resources{MilliCPU: 64000, Memory: 256 * gi}},
		},
		Quotas: []Quota{{Scope: "user:u1", Limits: ResourceList{"gpu/A": 8, KeyCPU: 64000}}},
	}, cfg)
	n1 := cfg.Nodes[0]
	cpu, mem := n1.AccelShare()
	assert.Equal(t, int64(12000), cpu)
	assert.Equal(t, 96*gi, mem)
}

func TestClusterConfigRejects(t *testing.T) {
	t.Parallel()
	node := "{name: n1, cpu: 1, memory: 1Gi}"
	cases := []struct{ name, spec, want string }{
		{"C10 negative quota names its place", strings.Replace(c10Config, "gpu/A: 8", "gpu/A: -8", 1),
			`quotas[0].limits["gpu/A"] "-8" is not allowed: use 0 or more`},
		{"node without a cluster", "nodes: [" + node + "]", `nodes[0].cluster "" is not allowed: declare the node's cluster under clusters`},
		{"node in an unknown cluster", "clusters: [{name: a}]\nnodes: [{name: n1, cluster: b, cpu: 1, memory: 1Gi}]",
			`nodes[0].cluster "b" is not allowed: declare the cluster under clusters`},
		{"ambiguous cluster", "clusters: [{name: a}, {name: b}]\nnodes: [" + node + "]", `nodes[0].cluster "" is not allowed: name one of the 2 clusters`},
		{"node twice", "clusters: [{name: a}]\nnodes: [" + node + ", " + node + "]", `nodes[1].name "n1" is not allowed: node names must be unique`},
		{"node in an unknown pool", "clusters: [{name: a}]\nnodes: [{name: n1, pool: p, cpu: 1, memory: 1Gi}]",
			`nodes[0].pool "p" is not allowed: declare the pool under pools`},
		{"bad node field", "clusters: [{name: a}]\nnodes: [{name: n1, cpu: -1, memory: 1Gi}]", `nodes[0].cpu "-1" is not allowed`},
		{"accelerator type in another case", "clusters: [{name: a}]\nnodes:\n- {name: g1, cpu: 8, memory: 8Gi, accelerators: {type: A100, count: 8}}\n- {name: g2, cpu: 8, memory: 8Gi, accelerators: {type: a100, count: 8}}",
			`nodes[1].accelerators.type "a100" is not allowed: node g1 has A100: types are case-sensitive, so write A100`},
		{"device type in another case", "clusters: [{name: a}]\nnodes:\n- {name: e1, cpu: 8, memory: 8Gi, devices: {jetson: 1}}\n- {name: e2, cpu: 8, memory: 8Gi, devices: {Jetson: 1}}",
			`nodes[1].devices "Jetson" is not allowed: node e1 has jetson: types are case-sensitive, so write jetson`},
		{"cluster twice", "clusters: [{name: a}, {name: a}]", `clusters[1].name "a" is not allowed: cluster names must be unique`},
		{"bad backend", "clusters: [{name: a, backend: nomad}]", `clusters[0].backend "nomad" is not allowed: use local or kubernetes`},
		{"bad redis", "clusters: [{name: a, redis: localhost}]", `clusters[0].redis "localhost" is not allowed: use host:port`},
		{"pool twice", "pools: [{name: p, project: a}, {name: p, project: b}]", `pools[1].name "p" is not allowed: pool names must be unique`},
		{"project with two pools", "pools: [{name: p, project: a}, {name: q, project: a}]", `pools[1].project "a" is not allowed: a project has one pool`},
		{"scope twice", "quotas: [{scope: 'user:a'}, {scope: 'user:a'}]", `quotas[1].scope "user:a" is not allowed: give each scope one quota`},
		{"unknown field", "clusters: [{name: a, nodes: []}]", "clusters[0].nodes is not a known field: use name, backend, redis"},
		{"empty", "# nothing", "cluster config is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseClusterConfig([]byte(tc.spec))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
