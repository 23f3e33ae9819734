package structs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

const gi = int64(1) << 30

// submit parses a job spec and converts it for owner u1.
func submit(data string) (*Job, error) {
	s, err := ParseJobSpec([]byte(data))
	if err != nil {
		return nil, err
	}
	return s.ToJob("u1")
}

func TestJobSpecKinds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		spec string
		want *Job
	}{{
		name: "mpi gang with fallbacks, volumes and cache",
		spec: `
kind: mpi
name: train-bev
project: perception
priority: normal
labels: {team: perception, app: bev}
image: registry.local/perception/bev:1.4
command: [python, train.py]
args: ["--epochs", "10"]
env: {NCCL_DEBUG: INFO, SCRIPT: "set -e\n\techo hi"}
replicas: 2
resources:
  cpu: "48"
  memory: 512Gi
  accelerators: {type: A100, count: 8}
selector: fabric=ib
tolerations: [{key: maint, operator: Exists, effect: NoSchedule}]
affinity: {spreadReplicas: true}
fallbacks:
  - accelerators: {type: H800}
  - replicas: 4
    accelerators: {count: 4}
  - accelerators: {type: any}
downgradeAfter: 10m
pendingTimeout: 1h
maxPreemptions: 3
volumes: [{name: ckpt, claim: bev-checkpoints, mountPath: /ckpt}]
cache: {datasets: [lidar/2024-05]}
`,
		want: &Job{
			Kind: KindMPI, Name: "train-bev", Owner: "u1", Project: "perception", Priority: PriorityNormal,
			Labels: map[string]string{"team": "perception", "app": "bev"},
			Image:  "registry.local/perception/bev:1.4", Command: []string{"python", "train.py"},
			Args: []string{"--epochs", "10"}, Env: map[string]string{"NCCL_DEBUG": "INFO", "SCRIPT": "set -e\n\techo hi"},
			Replicas:  2,
			Resources: Resources{MilliCPU: 48000, Memory: 512 * gi, AccelType: "A100", Accels: 8},
			Selector:  "fabric=ib",
			Tolerations: []corev1.Toleration{{Key: "maint", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule}},
			Affinity: Affinity{SpreadReplicas: true},
			Fallbacks: []Shape{
				{Replicas: 2, Resources: Resources{MilliCPU: 48000, Memory: 512 * gi, AccelType: "H800", Accels: 8}},
				{Replicas: 4, Resources: Resources{MilliCPU: 24000, Memory: 256 * gi, AccelType: "A100", Accels: 4}}, // cpu and memory scale by 4/8
				{Replicas: 2, Resources: Resources{MilliCPU: 48000, Memory: 512 * gi, Accels: 8}},
			},
			DowngradeAfter: Duration(10 * time.Minute), PendingTimeout: Duration(time.Hour), RestartPolicy: RestartNever, MaxPreemptions: 3,
			Volumes:        []Volume{{Name: "ckpt", Claim: "bev-checkpoints", MountPath: "/ckpt"}},
			CacheMountPath: "/mnt/cache", Datasets: []string{"lidar/2024-05"},
		},
	}, {
		name: "low spark job whose driver may take less cpu",
		spec: `
kind: spark
name: clean-lidar
priority: low
image: registry.local/data/spark:3.5
resources: {cpu: 8, memory: 32Gi}
fallbacks: [{cpu: 4}]
spark: {mainApplicationFile: "local:///opt/spark/jobs/clean.py"}
`,
		want: &Job{
			Kind: KindSpark, Name: "clean-lidar", Owner: "u1", Priority: PriorityLow,
			Image:    "registry.local/data/spark:3.5",
			Replicas: 1, Resources: Resources{MilliCPU: 8000, Memory: 32 * gi},
			Fallbacks:      []Shape{{Replicas: 1, Resources: Resources{MilliCPU: 4000, Memory: 32 * gi}}},
			DowngradeAfter: Duration(10 * time.Minute), PendingTimeout: Duration(DefaultPendingTimeout), RestartPolicy: RestartNever,
			Spark: &Spark{MainApplicationFile: "local:///opt/spark/jobs/clean.py", ServiceAccount: "spark",
				Executor: SparkExecutor{Instances: 2, Cores: 1, Memory: gi}},
		},
	}, {
		name: "high service in its project pool",
		spec: `
kind: service
name: bev-viewer
project: perception
priority: high
replicas: 4
minAvailable: 3
resources: {cpu: 500m, memory: 1Gi}
affinity: {spreadReplicas: true, awayFromJobs: ["app=db"]}
cache: {mountPath: /cache}
`,
		want: &Job{
			Kind: KindService, Name: "bev-viewer", Owner: "u1", Project: "perception", Priority: PriorityHigh,
			Replicas: 4, MinAvailable: 3, Resources: Resources{MilliCPU: 500, Memory: gi},
			Affinity:       Affinity{SpreadReplicas: true, AwayFromJobs: []string{"app=db"}},
			PendingTimeout: Duration(DefaultPendingTimeout), RestartPolicy: RestartAlways, CacheMountPath: "/cache",
		},
	}, {
		name: "service minAvailable defaults to 1",
		spec: "kind: service\nname: web\nreplicas: 2\nresources: {cpu: 1}",
		want: &Job{Kind: KindService, Name: "web", Owner: "u1", Replicas: 2, MinAvailable: 1,
			Resources: Resources{MilliCPU: 1000}, PendingTimeout: Duration(DefaultPendingTimeout), RestartPolicy: RestartAlways},
	}, {
		name: "edge command pinned to a node",
		spec: `
kind: command
name: flash-xavier
cluster: lab
nodeName: edge-01.lab.local
resources: {cpu: 1, devices: {jetson-xavier: 2}}
restartPolicy: OnFailure
`,
		want: &Job{
			Kind: KindCommand, Name: "flash-xavier", Owner: "u1", Cluster: "lab", NodeName: "edge-01.lab.local",
			Replicas: 1, Resources: Resources{MilliCPU: 1000, Devices: map[string]int64{"jetson-xavier": 2}},
			PendingTimeout: Duration(DefaultPendingTimeout), RestartPolicy: RestartOnFailure,
		},
	}, {
		name: "plugin kind in JSON with any accelerator type",
		spec: `{"kind": "ray", "name": "tune", "resources": {"accelerators": {"type": "any", "count": 1}},
			"affinity": {"withJobs": ["app in (cache, db)"]}}`,
		want: &Job{Kind: "ray", Name: "tune", Owner: "u1", Replicas: 1, Resources: Resources{Accels: 1},
			Affinity:       Affinity{WithJobs: []string{"app in (cache, db)"}},
			PendingTimeout: Duration(DefaultPendingTimeout), RestartPolicy: RestartNever},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := submit(tc.spec)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)

			// The spec survives a JSON round trip (the API echoes specs).
			s, err := ParseJobSpec([]byte(tc.spec))
			require.NoError(t, err)
			b, err := json.Marshal(s)
			require.NoError(t, err)
			again, err := submit(string(b))
			require.NoError(t, err)
			assert.Equal(t, got, again)
		})
	}
}

func TestJobSpecRejects(t *testing.T) {
	t.Parallel()
	const ok = "kind: command\nname: x\n" // prefix of a valid spec lacking resources
	cases := []struct {
		name string
		spec string
		want string
	}{
		// C10: negative, non-numeric, overflowing and fractional values.
		{"C10 X1 negative gpu", ok + "resources: {accelerators: {type: A, count: -4}}",
			"resources.accelerators.count -4 is not allowed: use 1 to 64"},
		{"C10 X2 negative cpu", ok + "resources: {cpu: -32, memory: 8Gi}",
			`resources.cpu "-32" is not allowed: use 0 or more`},
		{"C10 memory 2^63 bytes", ok + "resources: {memory: 9223372036854775808}",
			`resources.memory "9223372036854775808" is not allowed: it overflows 64 bits`},
		{"C10 memory 8Ei", ok + "resources: {memory: 8Ei}", `resources.memory "8Ei" is not allowed: it overflows 64 bits`},
		// A bare number is bytes: one meant as MiB is too small to run in.
		{"memory bare 1024", ok + "resources: {memory: 1024}",
			"resources.memory 1024 (1Ki) is too small: memory is in bytes unless it has a unit; did you mean 1024Mi?"},
		{"memory 512Ki", ok + "resources: {memory: 512Ki}", "resources.memory 512Ki is too small: use at least 1Mi"},
		{"memory bad unit", ok + "resources: {memory: 8GB}",
			`resources.memory "8GB" is not allowed: use a quantity such as 512Mi or 16Gi (a bare number is bytes)`},
		{"cpu bad unit", ok + "resources: {cpu: 2c}", `resources.cpu "2c" is not allowed: use a quantity such as 500m or 4`},
		{"cpu cores past int64 millicores", ok + "resources: {cpu: \"9223372036854775807\"}",
			`resources.cpu "9223372036854775807" is not allowed: it overflows 64 bits: use at most 9223372036854775 cores`},
		{"C10 gpu 4294967297", ok + "resources: {accelerators: {count: 4294967297}}",
			"resources.accelerators.count 4294967297 is not allowed: use 1 to 64"},
		{"C10 cpu NaN", ok + "resources: {cpu: NaN}", `resources.cpu "NaN" is not allowed: use a quantity`},
		{"C10 cpu .nan", ok + "resources: {cpu: .nan}", "resources.cpu NaN is not allowed: use a finite number"},
		{"cpu true", ok + "resources: {cpu: true}", "resources.cpu (a bool) is not allowed"},
		{"C10 gpu 0.5", ok + "resources: {accelerators: {count: 0.5}}",
			"resources.accelerators.count 0.5 is not allowed: use a whole number"},
		{"gpu .inf", ok + "resources: {accelerators: {count: .inf}}",
			"resources.accelerators.count +Inf is not allowed: use a finite number"},
		{"gpu beyond int64", ok + "resources: {accelerators: {count: 99999999999999999999}}",
			"resources.accelerators.count 99999999999999999999 is not allowed: use a whole number that fits in 64 bits"},
		{"gpu 65", ok + "resources: {accelerators: {count: 65}}", "resources.accelerators.count 65 is not allowed: use 1 to 64"},
		{"gpu type without count", ok + "resources: {accelerators: {type: A100}}", "resources.accelerators.count 0 is not allowed"},
		{"bad gpu type", ok + "resources: {accelerators: {type: 'A 100', count: 1}}", `resources.accelerators.type "A 100" is not allowed`},
		{"fractional millicores", ok + "resources: {cpu: 0.1m}", `resources.cpu "0.1m" is not allowed: use whole millicores`},
		{"fractional bytes", ok + "resources: {memory: 0.5}", `resources.memory "0.5" is not allowed: use whole bytes`},
		{"cpu overflow", ok + "resources: {cpu: 1e999}", `resources.cpu "1e999" is not allowed: it overflows 64 bits`},
		{"huge exponent", ok + `resources: {cpu: "1e-999999999"}`, `resources.cpu "1e-999999999" is not allowed: use a quantity`},
		{"cpu as a mapping", ok + "resources: {cpu: {a: 1}}", "resources.cpu (a mapping) is not allowed"},
		{"total overflows", ok + "replicas: 10000\nresources: {memory: 1Ei}",
			`resources.memory "1Ei" is not allowed: times 10000 replicas it overflows 64 bits`},
		{"devices with accelerators", ok + "resources: {accelerators: {count: 1}, devices: {xavier: 1}}",
			"resources.devices is not allowed with accelerators"},
		{"zero devices", ok + "resources: {devices: {xavier: 0}}", `resources.devices["xavier"] 0 is not allowed: use 1 or more`},
		{"fractional devices", ok + "resources: {devices: {xavier: 1.5}}", `resources.devices["xavier"] 1.5 is not allowed: use a whole number`},
		{"asks for nothing", ok + "resources: {cpu: 0}", "resources ask for nothing"},
		{"no resources", ok, "resources ask for nothing"},
		{"replicas 0", ok + "replicas: 0\nresources: {cpu: 1}", "replicas 0 is not allowed: use 1 to 10000"},
		{"service replicas 0", "kind: service\nname: web\nreplicas: 0\nresources: {cpu: 1}",
			`replicas 0 is not allowed: submit a service with 1 to 10000, then park it with coordinator service scale ID 0 (POST /v1/jobs/ID/scale {"replicas": 0})`},
		{"replicas negative", ok + "replicas: -3\nresources: {cpu: 1}", "replicas -3 is not allowed: use 1 to 10000"},
		{"replicas 10001", ok + "replicas: 10001\nresources: {cpu: 1}", "replicas 10001 is not allowed: use 1 to 10000"},
		{"replicas a string", ok + "replicas: two\nresources: {cpu: 1}", "replicas (a string) is not allowed: use a whole number"},
		{"minAvailable above replicas", "kind: service\nname: x\nreplicas: 2\nminAvailable: 3\nresources: {cpu: 1}",
			"minAvailable 3 is not allowed: use 1 to 2 (replicas)"},
		{"minAvailable 0", "kind: service\nname: x\nminAvailable: 0\nresources: {cpu: 1}", "minAvailable 0 is not allowed: use 1 to 1"},
		{"minAvailable on a gang", "kind: mpi\nname: x\nreplicas: 4\nminAvailable: 2\nresources: {cpu: 1}",
			"minAvailable 2 is not allowed: only services may start with fewer than replicas (4)"},

		// Names and text.
		{"empty spec", "", "job spec is empty"},
		{"comments only", "# nothing\n---\n", "job spec is empty"},
		{"empty object", "{}", "kind is required: use mpi, spark, service, command or a plugin's kind"},
		{"empty kind", "kind: \"\"\nname: x\nresources: {cpu: 1}", "kind is required: use mpi, spark, service, command or a plugin's kind"},
		{"two documents", "kind: command\nname: a\n---\nkind: command\nname: b\n", "job spec holds several YAML documents (a second starts at line 3): the spec must be a single document"},
		{"kind uppercase", "kind: MPI\nname: x\nresources: {cpu: 1}", `kind "MPI" is not allowed: use mpi, spark, service, command`},
		{"no name", "kind: command\nresources: {cpu: 1}", "name is required: use lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 (e.g. my-name)"},
		{"name too long", "kind: command\nname: " + strings.Repeat("a", 64) + "\nresources: {cpu: 1}",
			"must be no more than 63 characters"},
		{"name not DNS-1123", "kind: command\nname: Train_Job\nresources: {cpu: 1}", `name "Train_Job" is not allowed`},
		{"invalid UTF-8", "kind: command\nname: \xff\xfe\nresources: {cpu: 1}", "job spec is not valid UTF-8 (first bad byte at offset 20)"},
		{"replacement character from a JSON escape", `{"kind": "command", "name": "x", "image": "a\ufffd"}`,
			"image \"a\ufffd\" is not allowed: it holds U+FFFD"},
		{"control character in a name", "kind: command\nname: \"a\\x07\"\nresources: {cpu: 1}",
			`name "a\a" is not allowed: use printable text only`},
		{"control character in a label key", ok + "labels: {\"a\\x1b\": b}\nresources: {cpu: 1}", `labels key "a\x1b" is not allowed`},
		{"bidi override in a command", ok + "command: [\"abc\\u202Edef\"]\nresources: {cpu: 1}",
			`command[0] "abc\u202edef" is not allowed: use printable text, tabs and newlines only (no control characters)`},
		{"NUL in a command", ok + "command: [\"a\\0b\"]\nresources: {cpu: 1}",
			`command[0] "a\x00b" is not allowed: use printable text, tabs and newlines only`},
		{"newline in an image", ok + "image: \"a\\nb\"\nresources: {cpu: 1}", `image "a\nb" is not allowed: use printable text only`},
		{"image with spaces", ok + "image: 'my image'\nresources: {cpu: 1}", `image "my image" is not allowed`},
		{"bad project", ok + "project: Perception!\nresources: {cpu: 1}", `project "Perception!" is not allowed`},
		{"bad priority", ok + "priority: urgent\nresources: {cpu: 1}", `priority "urgent" is not allowed: use high, normal or low`},
		{"high without project", ok + "priority: high\nresources: {cpu: 1}", `priority "high" is not allowed: high jobs run only in their project's pool`},
		{"bad label value", ok + "labels: {app: 'a b'}\nresources: {cpu: 1}", `labels["app"] "a b" is not allowed: use a label value`},
		{"bad env name", ok + "env: {'1X': a}\nresources: {cpu: 1}", `env "1X" is not allowed`},
		{"reserved env name", ok + "env: {ATOM_TOKEN: a}\nresources: {cpu: 1}", `env "ATOM_TOKEN" is not allowed: ATOM_* variables are set by atom`},

		// Decoding.
		{"unknown field", ok + "resources: {cpu: 1}\nreplica: 2", "replica is not a known field (did you mean replicas?): use kind, name, project"},
		{"unknown nested field", ok + "resources: {cpu: 1, gpu: 1}", "resources.gpu is not a known field: use cpu, memory, accelerators, devices"},
		{"unknown field in a list", ok + "resources: {cpu: 1}\ntolerations: [{key: a, operater: Exists}]",
			"tolerations[0].operater is not a known field"},
		{"unknown field in JSON", `{"kind": "command", "name": "x", "resources": {"cpu": "1"}, "spot": true}`, "spot is not a known field"},
		{"duplicate field", ok + "name: y\nresources: {cpu: 1}", `key "name" already set in map`},
		{"field in the wrong case", ok + "resources: {cpu: 1}\nReplicas: 2", "Replicas is not a known field (did you mean replicas?): use kind, name"},
		{"nested field in the wrong case", ok + "resources: {CPU: 1}", "resources.CPU is not a known field: use cpu, memory"},
		{"kind starting with a digit", "kind: 1x\nname: x\nresources: {cpu: 1}", `kind "1x" is not allowed`},
		{"pendingTimeout below a second", ok + "resources: {cpu: 1}\npendingTimeout: 10ms", `pendingTimeout "10ms" is not allowed: use a duration such as 90s, 30m or 2h, from 1s to 168h`},
		{"not a mapping", "[1, 2]", "job spec is a YAML or JSON array: write a mapping of fields"},
		{"bad YAML", "kind: [command", "parse job spec: yaml: line 1"},
		{"too large", ok + "image: " + strings.Repeat("a", MaxSpecBytes), "job spec is 1048605 bytes: at most 1048576 are allowed"},

		// Placement.
		{"bad cluster", ok + "cluster: Lab\nresources: {cpu: 1}", `cluster "Lab" is not allowed`},
		{"bad nodeName", ok + "nodeName: n_1\nresources: {cpu: 1}", `nodeName "n_1" is not allowed: use a node name`},
		{"bad selector", ok + "selector: 'gpu in A100'\nresources: {cpu: 1}", `selector "gpu in A100" is not allowed: use a label selector`},
		{"empty job selector", ok + "affinity: {withJobs: ['']}\nresources: {cpu: 1}", `affinity.withJobs[0] "" is not allowed: use a non-empty label selector`},
		{"with and away from the same jobs", ok + "affinity: {withJobs: [app=a], awayFromJobs: [app=a]}\nresources: {cpu: 1}",
			`affinity.awayFromJobs[0] "app=a" is not allowed: the same selector is in withJobs`},
		{"spread on one node", ok + "replicas: 2\nnodeName: n1\naffinity: {spreadReplicas: true}\nresources: {cpu: 1}",
			"affinity.spreadReplicas true is not allowed: with nodeName all 2 replicas share one node"},
		{"toleration operator", ok + "tolerations: [{key: a, operator: Lt, value: '3'}]\nresources: {cpu: 1}",
			`tolerations[0].operator "Lt" is not allowed: use Exists or Equal`},
		{"toleration Exists with value", ok + "tolerations: [{key: a, operator: Exists, value: b}]\nresources: {cpu: 1}",
			`tolerations[0].value "b" is not allowed: operator Exists takes no value`},
		{"toleration effect", ok + "tolerations: [{key: a, value: b, effect: Never}]\nresources: {cpu: 1}",
			`tolerations[0].effect "Never" is not allowed: use NoSchedule, PreferNoSchedule or NoExecute`},
		{"toleration seconds", ok + "tolerations: [{key: a, effect: NoExecute, tolerationSeconds: -1}]\nresources: {cpu: 1}",
			"tolerations[0].tolerationSeconds -1 is not allowed: use 0 or more seconds"},

		// Pending ladder.
		{"fallback identical to the job", "kind: command\nname: x\nresources: {accelerators: {type: A, count: 2}}\nfallbacks: [{accelerators: {type: A}}]",
			"fallbacks[0] is identical to the job's own shape"},
		{"fallback identical to another", "kind: command\nname: x\nresources: {accelerators: {type: A, count: 2}}\nfallbacks: [{accelerators: {type: B}}, {accelerators: {type: B, count: 2}}]",
			"fallbacks[1] is identical to fallbacks[0]"},
		{"fallback asks for more", "kind: command\nname: x\nresources: {accelerators: {type: A, count: 2}}\nfallbacks: [{replicas: 3, accelerators: {count: 1}}]",
			"fallbacks[0].replicas 3 is not allowed: it makes 3 accelerators in total, more than the job's 2"},
		{"cpu fallback asks for more", "kind: spark\nname: x\nreplicas: 2\nresources: {cpu: 1}\nfallbacks: [{replicas: 3}]",
			"fallbacks[0].replicas 3 is not allowed: it makes 3 replicas in total, more than the job's 2"},
		{"mpi keeps its world size", "kind: mpi\nname: x\nreplicas: 4\nresources: {accelerators: {count: 8}}\nfallbacks: [{replicas: 2}]",
			"fallbacks[0].replicas 2 is not allowed: mpi fallbacks keep replicas × accelerators (the world size, 32)"},
		{"service keeps its replicas", "kind: service\nname: x\nreplicas: 4\nresources: {accelerators: {count: 1}}\nfallbacks: [{replicas: 2}]",
			"fallbacks[0].replicas 2 is not allowed: services keep at least their 4 replicas"},
		{"fallback accelerators on a cpu job", ok + "resources: {cpu: 1}\nfallbacks: [{accelerators: {count: 1}}]",
			"fallbacks[0].accelerators is not allowed: the job asks for no accelerators"},
		{"fallback replicas 0", ok + "replicas: 2\nresources: {cpu: 1}\nfallbacks: [{replicas: 0}]", "fallbacks[0].replicas 0 is not allowed: use 1 to 10000"},
		{"fallback gpu 65", ok + "resources: {accelerators: {count: 8}}\nfallbacks: [{accelerators: {count: 65}}]",
			"fallbacks[0].accelerators.count 65 is not allowed: use 1 to 64"},
		{"downgradeAfter without fallbacks", ok + "resources: {cpu: 1}\ndowngradeAfter: 10m",
			`downgradeAfter "10m" is not allowed: list fallbacks to downgrade to`},
		{"downgradeAfter past the timeout", ok + "replicas: 2\nresources: {cpu: 1}\nfallbacks: [{replicas: 1}]\ndowngradeAfter: 40m",
			`downgradeAfter "40m" is not allowed: use less than pendingTimeout (30m)`},
		{"pendingTimeout 0", ok + "resources: {cpu: 1}\npendingTimeout: 0s", `pendingTimeout "0s" is not allowed: use a duration`},
		{"pendingTimeout negative", ok + "resources: {cpu: 1}\npendingTimeout: -5m", `pendingTimeout "-5m" is not allowed`},
		{"pendingTimeout 8 days", ok + "resources: {cpu: 1}\npendingTimeout: 192h", `pendingTimeout "192h" is not allowed`},
		{"pendingTimeout in days", ok + "resources: {cpu: 1}\npendingTimeout: 1d", `pendingTimeout "1d" is not allowed: use a duration such as 90s, 30m or 2h`},

		// Lifecycle and storage.
		{"restartPolicy unknown", ok + "resources: {cpu: 1}\nrestartPolicy: Sometimes", `restartPolicy "Sometimes" is not allowed: use Never, OnFailure or Always`},
		{"restartPolicy in lower case", ok + "resources: {cpu: 1}\nrestartPolicy: onfailure", `restartPolicy "onfailure" is not allowed: did you mean OnFailure? (values are case-sensitive): use Never, OnFailure or Always`},
		{"service never restarts", "kind: service\nname: x\nresources: {cpu: 1}\nrestartPolicy: Never", `restartPolicy "Never" is not allowed: services restart`},
		{"mpi always restarts", "kind: mpi\nname: x\nresources: {cpu: 1}\nrestartPolicy: Always", `restartPolicy "Always" is not allowed: mpi jobs end`},
		{"maxPreemptions 0", ok + "resources: {cpu: 1}\nmaxPreemptions: 0", "maxPreemptions 0 is not allowed: use 1 to 1000"},
		{"maxPreemptions negative", ok + "resources: {cpu: 1}\nmaxPreemptions: -1", "maxPreemptions -1 is not allowed"},
		{"relative mount path", ok + "resources: {cpu: 1}\nvolumes: [{name: a, claim: c, mountPath: data}]",
			`volumes[0].mountPath "data" is not allowed: use a clean absolute path`},
		{"unclean mount path", ok + "resources: {cpu: 1}\nvolumes: [{name: a, claim: c, mountPath: /data/../etc}]", `volumes[0].mountPath "/data/../etc" is not allowed`},
		{"volume name twice", ok + "resources: {cpu: 1}\nvolumes: [{name: a, claim: c, mountPath: /a}, {name: a, claim: c, mountPath: /b}]",
			`volumes[1].name "a" is not allowed: volume names must be unique`},
		{"bad claim", ok + "resources: {cpu: 1}\nvolumes: [{name: a, claim: C!, mountPath: /a}]", `volumes[0].claim "C!" is not allowed`},
		{"cache over a volume", ok + "resources: {cpu: 1}\nvolumes: [{name: a, claim: c, mountPath: /mnt/cache}]\ncache: {datasets: [d]}",
			`cache.mountPath "/mnt/cache" is not allowed: volumes[0].mountPath already mounts there`},
		{"dataset escapes", ok + "resources: {cpu: 1}\ncache: {datasets: [lidar/../secrets]}", `cache.datasets[0] "lidar/../secrets" is not allowed`},
		{"dataset twice", ok + "resources: {cpu: 1}\ncache: {datasets: [a, a]}", `cache.datasets[1] "a" is not allowed: datasets must be unique`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, err := submit(tc.spec)
			require.Error(t, err)
			assert.Nil(t, j)
			assert.Contains(t, err.Error(), tc.want)
			if !strings.Contains(tc.name, "wrong case") { // those start with the user's field name
				assert.Equal(t, strings.ToLower(err.Error()[:1]), err.Error()[:1], "lowercase message")
			}
			assert.False(t, strings.HasSuffix(err.Error(), "."), "no trailing period")
		})
	}
}

func TestQuantityFromPlainJSON(t *testing.T) {
	t.Parallel()
	// The API may decode with encoding/json: numbers and strings both work.
	var r ResourcesSpec
	require.NoError(t, json.Unmarshal([]byte(`{"cpu": 4, "memory": "16Gi"}`), &r))
	assert.Equal(t, ResourcesSpec{CPU: "4", Memory: "16Gi"}, r)
	err := json.Unmarshal([]byte(`{"cpu": true}`), &r)
	assert.ErrorContains(t, err, "cpu")
}

func TestJobSpecFieldErrorType(t *testing.T) {
	t.Parallel()
	_, err := ParseJobSpec([]byte("kind: command\nname: x\nresources: {cpu: -1}"))
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "resources.cpu", fe.Field)
}

func TestToJobOwner(t *testing.T) {
	t.Parallel()
	s, err := ParseJobSpec([]byte("kind: command\nname: x\nresources: {cpu: 1}"))
	require.NoError(t, err)
	for _, owner := range []UserID{"", "a b", UserID(strings.Repeat("u", 64))} {
		_, err := s.ToJob(owner)
		assert.ErrorContains(t, err, "owner", "owner %q", owner)
	}
}

func TestToJobValidatesBuiltSpecs(t *testing.T) {
	t.Parallel()
	// Specs built in code (not parsed) get the same checks.
	neg := int64(-2)
	s := &JobSpec{Kind: KindCommand, Name: "x", Replicas: &neg, Resources: ResourcesSpec{CPU: "1"}}
	_, err := s.ToJob("u1")
	assert.ErrorContains(t, err, "replicas -2 is not allowed")
	s = &JobSpec{Kind: KindCommand, Name: "x\x00", Resources: ResourcesSpec{CPU: "1"}}
	assert.ErrorContains(t, s.Validate(), `name "x\x00" is not allowed`)
}

func TestJobSpecChargeNeverNegative(t *testing.T) {
	t.Parallel()
	// C10: what is accepted charges a non-negative amount; the rest is refused.
	for _, spec := range []string{
		"kind: command\nname: x1\nresources: {accelerators: {type: A, count: 4}}",
		"kind: command\nname: x2\nresources: {cpu: 32, memory: 8Gi}",
		"kind: command\nname: x3\nreplicas: 10000\nresources: {cpu: 1e11, memory: 1Ti}",
	} {
		j, err := submit(spec)
		require.NoError(t, err)
		for i := 0; i < j.NumShapes(); i++ {
			for k, v := range Charge(j.ShapeAt(i)) {
				assert.GreaterOrEqual(t, v, int64(0), "%s %s", j.Name, k)
			}
		}
	}
}
