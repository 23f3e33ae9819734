package structs

// Regression tests for the review of the spec parsers: single documents,
// YAML 1.2 values, the fallback bound, fallback cpu/memory scaling and
// nodes with both accelerators and devices.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

const singleDoc = "the spec must be a single document"

// Every parser refuses every form of a second document: after ---, after
// the document-end marker ..., and a second JSON value after the first. A
// marker with nothing after it starts no document.
func TestSpecsRefuseASecondDocument(t *testing.T) {
	t.Parallel()
	parsers := []struct {
		name  string
		parse func([]byte) error
		yaml  string // one valid document in YAML
		json  string // the same in JSON
	}{
		{"job", func(b []byte) error { _, err := ParseJobSpec(b); return err },
			"kind: command\nname: a\nresources: {cpu: 1}\n", `{"kind": "command", "name": "a", "resources": {"cpu": 1}}`},
		{"cluster", func(b []byte) error { _, err := ParseClusterConfig(b); return err },
			"clusters: [{name: a}]\nnodes: [{name: n1, cpu: 1, memory: 1Gi}]\n", `{"clusters": [{"name": "a"}]}`},
		{"quota", func(b []byte) error { _, err := ParseQuotaSpec(b); return err },
			"scope: user:u1\nlimits: {cpu: 1}\n", `{"scope": "user:u1"}`},
		{"node", func(b []byte) error { _, err := ParseNodeSpec(b); return err },
			"name: n1\ncpu: 1\nmemory: 1Gi\n", `{"name": "n1", "cpu": 1, "memory": "1Gi"}`},
		{"pool", func(b []byte) error { _, err := ParsePoolSpec(b); return err },
			"name: public\n", `{"name": "public"}`},
	}
	for _, p := range parsers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			// One document, with or without markers, is fine, and so are
			// markers with nothing after them (a trailing ---, as kubectl
			// takes it).
			for _, ok := range []string{p.yaml, "---\n" + p.yaml, p.yaml + "...\n", "---\n" + p.yaml + "...\n# done\n", p.json, p.json + "\n",
				p.yaml + "---\n", p.yaml + "...\n---\n", "---\n" + p.yaml + "---\n# none\n...\n", "---\n---\n" + p.yaml, p.json + "\n---\n"} {
				require.NoError(t, p.parse([]byte(ok)), "%q", ok)
			}
			for _, two := range []string{
				p.yaml + "---\n" + p.yaml,
				p.yaml + "...\n" + p.yaml,
				p.yaml + "...\n---\n" + p.yaml,
				p.yaml + "...\nreplicas: 5\n",
				p.json + "\n" + p.json,
				p.json + " " + p.json,
				p.json + "\n{\"replicas\": 5}",
				p.json + "\n[]",
				p.json + "\n---\n" + p.json,
				p.yaml + "---\n~\n",
			} {
				err := p.parse([]byte(two))
				require.Error(t, err, "%q", two)
				assert.Contains(t, err.Error(), singleDoc, "%q", two)
			}
		})
	}
}

func TestClusterConfigNodesAfterDocumentEnd(t *testing.T) {
	t.Parallel()
	// Nodes after ... used to vanish without a word.
	_, err := ParseClusterConfig([]byte("clusters: [{name: a}]\nnodes:\n  - {name: n1, cpu: 1, memory: 1Gi}\n...\nnodes:\n  - {name: n2, cpu: 1, memory: 1Gi}\n"))
	assert.EqualError(t, err, "cluster config holds several YAML documents (more follows the first): "+singleDoc)
	_, err = ParseJobSpec([]byte(`{"kind": "command", "name": "a", "resources": {"cpu": 1}}` + "\n" + `{"replicas": 5}`))
	assert.EqualError(t, err, "job spec holds several YAML documents (more follows the first): "+singleDoc)
	_, err = ParseJobSpec([]byte("kind: command\nname: a\nresources: {cpu: 1}\n---\nreplicas: 5\n"))
	assert.EqualError(t, err, "job spec holds several YAML documents (a second starts at line 4): "+singleDoc)
}

// YAML 1.1 values are not rewritten: string fields take what is written,
// numbers are decimal.
func TestSpecYAML12Values(t *testing.T) {
	t.Parallel()
	j, err := submit(`
kind: command
name: on
project: no
labels: {ib: yes, off: "n"}
command: [yes, no, on, off, y, n, 010, 0x10, 1_000, 2024-05-01, ~]
env: {A: off, B: 0o17, C: 1.50}
replicas: 010
resources: {cpu: 010, memory: 0010Mi}
tolerations: [{key: gpu, value: yes, effect: NoSchedule}]
affinity: {spreadReplicas: True}
`)
	require.NoError(t, err)
	assert.Equal(t, "on", j.Name)
	assert.Equal(t, ProjectID("no"), j.Project)
	assert.Equal(t, map[string]string{"ib": "yes", "off": "n"}, j.Labels)
	assert.Equal(t, []string{"yes", "no", "on", "off", "y", "n", "010", "0x10", "1_000", "2024-05-01", ""}, j.Command)
	assert.Equal(t, map[string]string{"A": "off", "B": "0o17", "C": "1.50"}, j.Env)
	assert.Equal(t, 10, j.Replicas, "010 is decimal 10, not octal 8")
	assert.Equal(t, int64(10000), j.Resources.MilliCPU)
	assert.Equal(t, int64(10<<20), j.Resources.Memory)
	assert.Equal(t, "yes", j.Tolerations[0].Value)
	assert.True(t, j.Affinity.SpreadReplicas)

	// Whole numbers may be written as decimals; the value is what counts.
	for _, count := range []string{"4", "+4", "04", "4.0", "4.", "0.4e1", "40e-1"} {
		j, err := submit("kind: command\nname: x\nresources: {accelerators: {count: " + count + "}}")
		require.NoError(t, err, count)
		assert.Equal(t, int64(4), j.Resources.Accels, count)
	}

	// The selector ib=yes matches a node tagged ib: yes.
	n, err := ParseNodeSpec([]byte("name: n1\ncpu: 8\nmemory: 8Gi\ntags: {ib: yes, fabric: on, gen: 010}"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"ib": "yes", "fabric": "on", "gen": "010"}, n.Tags)
	sel, err := labels.Parse("ib=yes,fabric=on,gen=010")
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set(n.Tags)))

	p, err := ParsePoolSpec([]byte("name: off\nproject: no\nmembers: [yes, on]"))
	require.NoError(t, err)
	assert.Equal(t, &Pool{Name: "off", Project: "no", Members: []UserID{"yes", "on"}}, p)

	// Such specs survive the JSON round trip the API does.
	s, err := ParseJobSpec([]byte("kind: command\nname: on\nproject: no\nreplicas: 010\nresources: {cpu: 010}"))
	require.NoError(t, err)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	s2, err := ParseJobSpec(b)
	require.NoError(t, err)
	assert.Equal(t, s, s2)
}

func TestSpecYAML12Rejects(t *testing.T) {
	t.Parallel()
	const ok = "kind: command\nname: x\n"
	cases := []struct{ name, spec, want string }{
		{"hex replicas", ok + "replicas: 0x10\nresources: {cpu: 1}", `replicas "0x10" is not allowed: write numbers in decimal`},
		{"octal replicas", ok + "replicas: 0o10\nresources: {cpu: 1}", `replicas "0o10" is not allowed: write numbers in decimal`},
		{"binary count", ok + "resources: {accelerators: {count: 0b11}}", `resources.accelerators.count "0b11" is not allowed: write numbers in decimal`},
		{"hex cpu", ok + "resources: {cpu: 0x10}", `resources.cpu "0x10" is not allowed: use a quantity`},
		{"underscores", ok + "replicas: 1_0\nresources: {cpu: 1}", "replicas (a string) is not allowed: use a whole number"},
		{"yes is not a bool", ok + "resources: {cpu: 1}\naffinity: {spreadReplicas: yes}", "affinity.spreadReplicas (a string) is not allowed: use true or false"},
		{"on is not a bool", ok + "resources: {cpu: 1}\nvolumes: [{name: a, claim: c, mountPath: /a, readOnly: on}]", "volumes[0].readOnly (a string) is not allowed: use true or false"},
		{"fraction", ok + "replicas: 2.5\nresources: {cpu: 1}", "replicas 2.5 is not allowed: use a whole number"},
		{"huge exponent", ok + "replicas: 1e999999999999\nresources: {cpu: 1}", "replicas 1e999999999999 is not allowed: use a whole number that fits in 64 bits"},
		{"tiny exponent", ok + "replicas: 1e-999999999999\nresources: {cpu: 1}", "replicas 1e-999999999999 is not allowed: use a whole number"},
		{"-.inf", ok + "replicas: -.inf\nresources: {cpu: 1}", "replicas -Inf is not allowed: use a finite number"},
		{"memory .inf", ok + "resources: {memory: .Inf}", "resources.memory +Inf is not allowed: use a finite number"},
		{"custom tag", ok + "image: !secret x\nresources: {cpu: 1}", "job spec: line 3: the tag !secret is not supported"},
		{"binary tag", ok + "image: !!binary aGk=\nresources: {cpu: 1}", "the tag !!binary is not supported"},
		{"wrong core tag", ok + "replicas: !!int two\nresources: {cpu: 1}", `job spec: line 3: "two" is not a valid !!int`},
		{"nested duplicate", ok + "resources: {cpu: 1, cpu: 2}", `parse job spec: line 3: key "cpu" already set in map in resources (first at line 3)`},
		{"duplicate in JSON", `{"kind": "command", "name": "x", "name": "y"}`, `key "name" already set in map`},
		{"mapping key", ok + "resources: {cpu: 1}\nlabels: {[a]: b}", "a mapping key must be text"},
		{"scalar document", "on", "job spec is a YAML or JSON string: write a mapping of fields"},
		{"merge of a scalar", ok + "resources: {<<: 1}", "<< merges a mapping or a list of mappings"},
		{"unknown field through a merge", ok + "resources: {<<: {cpus: 1}}", "resources.cpus is not a known field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := submit(tc.spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// !!str keeps text where a number would be read.
	j, err := submit(ok + "image: !!str 010\nresources: {cpu: !!str 2}")
	require.NoError(t, err)
	assert.Equal(t, "010", j.Image)
	assert.Equal(t, int64(2000), j.Resources.MilliCPU)
}

func TestSpecAnchorsAndMerges(t *testing.T) {
	t.Parallel()
	cfg, err := ParseClusterConfig([]byte(`
clusters: [{name: a}]
nodes:
  - {<<: &g8 {cpu: 96, memory: 768Gi, accelerators: {type: A, count: 8}, tags: &t {fabric: ib}}, name: n1}
  - {<<: *g8, name: n2, cpu: 64}
  - {<<: [{cpu: 1}, *g8], name: n3, tags: *t}
`))
	require.NoError(t, err)
	require.Len(t, cfg.Nodes, 3)
	assert.Equal(t, int64(96000), cfg.Nodes[0].Capacity.MilliCPU)
	assert.Equal(t, int64(64000), cfg.Nodes[1].Capacity.MilliCPU, "explicit keys win over merged ones")
	assert.Equal(t, int64(1000), cfg.Nodes[2].Capacity.MilliCPU, "the earlier merge wins")
	assert.Equal(t, int64(8), cfg.Nodes[2].Capacity.Accels)
	assert.Equal(t, map[string]string{"fabric": "ib"}, cfg.Nodes[2].Tags)
}

func TestSpecBombsRefusedQuickly(t *testing.T) {
	t.Parallel()
	// Aliases are weighed before anything is converted, wherever they are.
	// taints[].timeAdded (a metav1.Time) takes any YAML value, so it is
	// where nesting reaches the depth bound.
	const ok = "kind: command\nname: x\nresources: {cpu: 1}\n"
	node := func(v string) string {
		return "name: n1\ncpu: 1\nmemory: 1Gi\ntaints: [{key: a, effect: NoSchedule, timeAdded: " + v + "}]\n"
	}
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	cases := []struct{ name, spec, want string }{
		{"billion laughs", node(laughs(10)), "excessive aliasing: its aliases expand to more than 1048576 values and bytes"},
		{"billion merges", node(merges(10)), "excessive aliasing: its aliases expand to more than 1048576 values and bytes"},
		{"billion merges into a struct", "name: n1\ncpu: 1\nmemory: 1Gi\naccelerators: {<<: [" + mergeChain(10) + "]}\n",
			"excessive aliasing: its aliases expand to more than 1048576 values and bytes"},
		{"aliased large string", node("[&s \"" + strings.Repeat("a", 500_000) + "\", *s, *s, *s]"),
			"excessive aliasing: its aliases expand to more than 1048576 values and bytes"},
		{"deep nesting", node(deep), "nests deeper than 64 levels"},
		{"alias cycle", node("&c [*c]"), "node spec: line 4: an alias refers to a node that holds it"},
		{"merge cycle", node("&e {<<: *e}"), "an alias refers to a node that holds it"},
		{"merge cycle in a typed map", ok + "env: &e {<<: *e}\n", "an alias refers to a node that holds it"},
		{"laughs in a typed field", ok + "command: " + laughs(10), "excessive aliasing"},
		{"laughs under unknown fields", ok + "lol: " + laughs(10), "excessive aliasing"},
		{"deep nesting in a typed field", ok + "command: " + deep, "command[0] (a list) is not allowed: use a string"},
		{"deep block nesting", ok + "labels:\n" + deepBlock(300), `labels["k0"] (a mapping) is not allowed: use a string`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parse := func(b []byte) error { _, err := ParseNodeSpec(b); return err }
			if strings.HasPrefix(tc.spec, "kind:") {
				parse = func(b []byte) error { _, err := submit(string(b)); return err }
			}
			start := time.Now()
			err := parse([]byte(tc.spec))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Less(t, time.Since(start), 10*time.Second) // about 0.1 s; a bomb would take minutes
		})
	}
}

// laughs is a flow list whose item i is an anchored list of ten aliases of
// item i-1: the last expands to 10^levels values.
func laughs(levels int) string {
	items := []string{"&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"}
	for i := 1; i < levels; i++ {
		items = append(items, fmt.Sprintf("&l%d [%s]", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", ")))
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// merges is laughs with << merge keys.
func merges(levels int) string {
	items := []string{"K0: &m0 {a: lol}"}
	for i := 1; i < levels; i++ {
		items = append(items, fmt.Sprintf("K%d: &m%d {<<: [%s]}", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", ")))
	}
	return "{" + strings.Join(items, ", ") + "}"
}

// mergeChain is a merge list of &t0 {type: A} and &t1..&t<levels-1>,
// each merging ten of the one before.
func mergeChain(levels int) string {
	items := []string{"&t0 {type: A}"}
	for i := 1; i < levels; i++ {
		items = append(items, fmt.Sprintf("&t%d {<<: [%s]}", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*t%d, ", i-1), 10), ", ")))
	}
	return strings.Join(items, ", ")
}

func deepBlock(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat(" ", i+1), i)
	}
	return b.String()
}

func TestFallbacksBounded(t *testing.T) {
	t.Parallel()
	head := "kind: command\nname: x\ncommand: [./etl]\nreplicas: 10000\nresources: {cpu: 1}\nfallbacks:\n"
	var b strings.Builder
	for i := 0; i < MaxFallbacks; i++ {
		fmt.Fprintf(&b, "  - {replicas: %d}\n", 10000-1-i)
	}
	j, err := submit(head + b.String())
	require.NoError(t, err)
	assert.Len(t, j.Fallbacks, MaxFallbacks)

	fmt.Fprintf(&b, "  - {replicas: %d}\n", 10000-1-MaxFallbacks)
	_, err = submit(head + b.String())
	assert.EqualError(t, err, "fallbacks has 17 entries: at most 16 are allowed")

	// 22,000 fallbacks in 0.9 MB used to take 2 s.
	b.Reset()
	for i := 0; i < 22000; i++ {
		fmt.Fprintf(&b, "  - {replicas: %d, cpu: 500m, memory: 1Gi}\n", 1+i%9999)
	}
	spec := head + b.String()
	require.Greater(t, len(spec), 900_000)
	_, err = submit(spec)
	assert.EqualError(t, err, "fallbacks has 22000 entries: at most 16 are allowed")

	// Parsing 0.9 MB takes its time; the check itself is immediate.
	js := &JobSpec{Kind: KindSpark, Name: "x", Resources: ResourcesSpec{CPU: "1"}, Fallbacks: make([]FallbackSpec, 22000)}
	start := time.Now()
	assert.EqualError(t, js.Validate(), "fallbacks has 22000 entries: at most 16 are allowed")
	assert.Less(t, time.Since(start), 100*time.Millisecond)

	// The duplicate check still names the earlier rung.
	_, err = submit("kind: spark\nname: x\nreplicas: 9\nresources: {cpu: 1}\nfallbacks: [{replicas: 8}, {replicas: 7}, {replicas: 6}, {replicas: 7}]")
	assert.ErrorContains(t, err, "fallbacks[3] is identical to fallbacks[1]")
}

func TestFallbackScalesCPUAndMemory(t *testing.T) {
	t.Parallel()
	r := func(cpu, mem int64, typ string, n int64) Resources {
		return Resources{MilliCPU: cpu, Memory: mem, AccelType: typ, Accels: n}
	}
	cases := []struct {
		name string
		spec string
		want []Shape
	}{{
		name: "fewer accelerators per replica scale cpu and memory down",
		spec: "kind: mpi\nname: x\nresources: {cpu: 48, memory: 512Gi, accelerators: {type: A100, count: 8}}\n" +
			"fallbacks: [{replicas: 4, accelerators: {count: 2}}, {accelerators: {type: H800}}]",
		want: []Shape{{Replicas: 4, Resources: r(12000, 128*gi, "A100", 2)}, {Replicas: 1, Resources: r(48000, 512*gi, "H800", 8)}},
	}, {
		name: "scaling rounds up to whole millicores and bytes",
		spec: "kind: command\nname: x\nresources: {cpu: 1, memory: 1000Mi, accelerators: {count: 3}}\nfallbacks: [{accelerators: {count: 1}}, {replicas: 3, accelerators: {count: 1}}]",
		want: []Shape{{Replicas: 1, Resources: r(334, 349525334, "", 1)}, {Replicas: 3, Resources: r(334, 349525334, "", 1)}},
	}, {
		name: "more accelerators per replica scale up",
		spec: "kind: command\nname: x\nreplicas: 2\nresources: {cpu: 8, accelerators: {count: 2}}\nfallbacks: [{replicas: 1, accelerators: {count: 4}}]",
		want: []Shape{{Replicas: 1, Resources: r(16000, 0, "", 4)}},
	}, {
		name: "a fallback may give its own cpu and memory",
		spec: "kind: mpi\nname: x\nresources: {cpu: 48, memory: 512Gi, accelerators: {type: A100, count: 8}}\n" +
			"fallbacks: [{replicas: 4, accelerators: {count: 2}, cpu: 20, memory: 100Gi}, {replicas: 4, accelerators: {count: 2}, cpu: 10}, {cpu: 40}]",
		want: []Shape{
			{Replicas: 4, Resources: r(20000, 100*gi, "A100", 2)},
			{Replicas: 4, Resources: r(10000, 128*gi, "A100", 2)},
			{Replicas: 1, Resources: r(40000, 512*gi, "A100", 8)},
		},
	}, {
		name: "a cpu job may ask for less cpu per replica",
		spec: "kind: command\nname: x\ncommand: [./etl]\nreplicas: 5\nresources: {cpu: 8, memory: 32Gi}\n" +
			"fallbacks: [{cpu: 4}, {replicas: 3, cpu: 12, memory: 48Gi}]",
		want: []Shape{{Replicas: 5, Resources: r(4000, 32*gi, "", 0)}, {Replicas: 3, Resources: r(12000, 48*gi, "", 0)}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, err := submit(tc.spec)
			require.NoError(t, err)
			assert.Equal(t, tc.want, j.Fallbacks)
			checkJobInvariants(t, j)
		})
	}

	const ok = "kind: command\nname: x\n"
	for _, tc := range []struct{ name, spec, want string }{
		{"more cpu in total", "kind: spark\nname: x\nreplicas: 5\nresources: {cpu: 8}\nfallbacks: [{replicas: 3, cpu: 16}]",
			`fallbacks[0].cpu "16" is not allowed: 3 replicas make 48 cores in total, more than the job's 40`},
		{"more memory in total", "kind: spark\nname: x\nreplicas: 2\nresources: {cpu: 1, memory: 1Gi}\nfallbacks: [{replicas: 1, memory: 3Gi}]",
			`fallbacks[0].memory "3Gi" is not allowed: 1 replicas make 3Gi in total, more than the job's 2Gi`},
		{"same cpu as the job", ok + "resources: {cpu: 2, accelerators: {count: 2}}\nfallbacks: [{cpu: 2}]",
			"fallbacks[0] is identical to the job's own shape: a fallback must change replicas, accelerators, cpu or memory"},
		{"asks for nothing", ok + "replicas: 2\nresources: {cpu: 1}\nfallbacks: [{replicas: 1, cpu: 0}]",
			"fallbacks[0] asks for nothing"},
		{"bad cpu", ok + "resources: {cpu: 1, accelerators: {count: 2}}\nfallbacks: [{cpu: -1}]", `fallbacks[0].cpu "-1" is not allowed: use 0 or more`},
		{"cpu NaN", ok + "resources: {cpu: 1, accelerators: {count: 2}}\nfallbacks: [{cpu: .nan}]", "fallbacks[0].cpu NaN is not allowed: use a finite number"},
		{"explicit cpu overflows", ok + "resources: {accelerators: {count: 2}}\nfallbacks: [{replicas: 1, accelerators: {count: 1}, memory: 8Ei}]",
			`fallbacks[0].memory "8Ei" is not allowed: it overflows 64 bits`},
		{"scaled cpu overflows", ok + "resources: {memory: 4Ei, accelerators: {count: 1}}\nfallbacks: [{accelerators: {count: 4}}]",
			"fallbacks[0].accelerators.count 4 is not allowed: it scales the job's memory per replica beyond 64 bits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := submit(tc.spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNodeWithAcceleratorsAndDevices(t *testing.T) {
	t.Parallel()
	const want = "devices are not allowed with accelerators: a node has accelerators or edge devices, not both"
	_, err := ParseNodeSpec([]byte("name: n1\ncpu: 8\nmemory: 8Gi\naccelerators: {type: A, count: 1}\ndevices: {jetson: 1}"))
	assert.EqualError(t, err, want)
	_, err = ParseClusterConfig([]byte("clusters: [{name: a}]\nnodes: [{name: n1, cpu: 8, memory: 8Gi, accelerators: {type: A, count: 1}, devices: {jetson: 1}}]"))
	assert.EqualError(t, err, "nodes[0]."+want)
}
