package spark

import (
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/atom-sched/atom/pkg/structs"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestGolden turns each testdata/NAME.yaml job spec into the spark-submit
// line in NAME.golden, one argument per line, or "error: " and the
// message for specs that are refused; the executor pod template of a job
// with tolerations is in NAME.pod-template.golden (none for the others).
func TestGolden(t *testing.T) {
	specs, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, specs)
	for _, path := range specs {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			got := render(t, data)
			golden := strings.TrimSuffix(path, ".yaml") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./plugins/spark -update to write it")
			assert.Equal(t, string(want), got)
			assert.Equal(t, strings.HasPrefix(name, "refuse-"), strings.HasPrefix(got, "error: "), "refuse-* specs, and only they, are refused")
		})
		t.Run(name+"/pod-template", func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			golden := strings.TrimSuffix(path, ".yaml") + ".pod-template.golden"
			j, err := submit(data)
			var tmpl []byte
			if err == nil {
				tmpl, err = ExecutorPodTemplate(j)
				require.NoError(t, err)
			}
			if *update {
				if tmpl == nil {
					if err := os.Remove(golden); !errors.Is(err, os.ErrNotExist) {
						require.NoError(t, err)
					}
					return
				}
				require.NoError(t, os.WriteFile(golden, tmpl, 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			if tmpl == nil {
				require.ErrorIs(t, err, os.ErrNotExist, "a job without tolerations has no executor pod template")
				return
			}
			require.NoError(t, err, "run go test ./plugins/spark -update to write it")
			assert.Equal(t, string(want), string(tmpl))
		})
	}
}

// render submits a spec as the coordinator would and builds its line for
// the driver pod of replica 0, in the job's namespace or atom-jobs.
func render(t *testing.T, spec []byte) string {
	t.Helper()
	j, err := submit(spec)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	ns := j.Spark.Namespace
	if ns == "" {
		ns = "atom-jobs"
	}
	argv, err := Command(Input{Job: j, DriverPod: string(j.ID) + "-0-a1b2", Namespace: ns,
		ExecutorPodTemplateFile: "/tmp/atom-" + string(j.ID) + "-0-a1b2-executor-pod.yaml"})
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return strings.Join(argv, "\n") + "\n"
}

func submit(spec []byte) (*structs.Job, error) {
	s, err := structs.ParseJobSpec(spec)
	if err != nil {
		return nil, err
	}
	j, err := s.ToJob("u1")
	if err != nil {
		return nil, err
	}
	j.ID = structs.JobID(j.Name + "-x7k2p")
	return j, nil
}

func job(t *testing.T) *structs.Job {
	t.Helper()
	j, err := submit([]byte("kind: spark\nname: clean\nimage: spark:3.5\nresources: {cpu: 1}\n" +
		"spark: {mainApplicationFile: /app.py, executor: {gpu: {type: A100}}, dynamicAllocation: {maxExecutors: 4}}"))
	require.NoError(t, err)
	return j
}

func TestCommandRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(*Input)
		want string
	}{
		{"no job", func(in *Input) { in.Job = nil }, "spark: no job given"},
		{"another kind", func(in *Input) { in.Job.Kind = structs.KindMPI },
			"spark: job clean-x7k2p is of kind mpi: only spark jobs run spark-submit"},
		{"no spark section", func(in *Input) { in.Job.Spark = nil }, "spark: job clean-x7k2p has no spark section"},
		{"no job ID", func(in *Input) { in.Job.ID = "" },
			`spark: job ID "" is not allowed: executors carry it as a label value (submit the job first)`},
		{"min above max", func(in *Input) { in.Job.Spark.DynamicAllocation.MinExecutors = 5 },
			"spark: job clean-x7k2p: spark.dynamicAllocation.minExecutors 5 is not allowed: use at most maxExecutors (4)"},
		{"GPUs without a type", func(in *Input) { in.Job.Spark.Executor.GPU.Type = "" },
			`spark: job clean-x7k2p: spark.executor.gpu.type "" is not allowed: name one accelerator type, such as A100`},
		{"no driver pod", func(in *Input) { in.DriverPod = "" }, "spark: no driver pod given: executors name it as their owner"},
		{"bad driver pod", func(in *Input) { in.DriverPod = "Driver_0" },
			`spark: driver pod name "Driver_0" is not allowed: use a pod name (a DNS-1123 subdomain)`},
		{"no namespace", func(in *Input) { in.Namespace = "" }, "spark: no driver pod namespace given: executors share it"},
		{"bad namespace", func(in *Input) { in.Namespace = "a.b" },
			`spark: driver pod namespace "a.b" is not allowed: use a namespace name (a DNS-1123 label)`},
		{"namespace mismatch", func(in *Input) { in.Job.Spark.Namespace = "data" },
			"spark: the driver pod runs in namespace atom-jobs but job clean-x7k2p asks for data: executors must share their owner's namespace"},
		{"bad host variable", func(in *Input) { in.DriverHostEnv = "POD IP" }, `spark: driver host variable "POD IP" is not allowed: use a variable name such as ATOM_POD_IP`},
		{"no image", func(in *Input) { in.Job.Image = "" }, `spark: executor image "" is not allowed: give the job an image`},
		{"bad scheduler", func(in *Input) { in.SchedulerName = "Atom Scheduler" }, `spark: scheduler name "Atom Scheduler" is not allowed: use a scheduler name such as atom (a DNS-1123 subdomain)`},
		{"API server without a scheme", func(in *Input) { in.APIServer = "kubernetes.default.svc" },
			`spark: API server "kubernetes.default.svc" is not allowed: use a URL such as https://kubernetes.default.svc:443`},
		{"API server with a path", func(in *Input) { in.APIServer = "https://k8s.local/api" },
			`spark: API server "https://k8s.local/api" is not allowed: use a URL such as https://kubernetes.default.svc:443`},
		{"tolerations without a pod template file", func(in *Input) {
			in.Job.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
		}, `spark: executor pod template file "" is not allowed: job clean-x7k2p has tolerations, which its executors get from that template; give an absolute path`},
		{"a relative pod template file", func(in *Input) {
			in.Job.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
			in.ExecutorPodTemplateFile = "executor.yaml"
		}, `spark: executor pod template file "executor.yaml" is not allowed: job clean-x7k2p has tolerations, which its executors get from that template; give an absolute path`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := Input{Job: job(t), DriverPod: "clean-x7k2p-0-a1b2", Namespace: "atom-jobs"}
			tc.edit(&in)
			_, err := Command(in)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestCommandInput(t *testing.T) {
	t.Parallel()
	argv, err := Command(Input{Job: job(t), DriverPod: "p", Namespace: "ns", DriverHostEnv: "MY_IP",
		Image: "registry.local/spark:3.5", SchedulerName: "atom-eu", APIServer: "http://10.0.0.1"})
	require.NoError(t, err)
	line := strings.Join(argv, " ")
	for _, want := range []string{"--master k8s://http://10.0.0.1:80 ", "spark.driver.host=$(MY_IP) ",
		"spark.kubernetes.container.image=registry.local/spark:3.5 ", "spark.kubernetes.scheduler.name=atom-eu "} {
		assert.Contains(t, line, want)
	}
	argv, err = Command(Input{Job: job(t), DriverPod: "p", Namespace: "ns", APIServer: "https://k8s.local:6443/"})
	require.NoError(t, err)
	assert.Equal(t, "k8s://https://k8s.local:6443", argv[2])
}

// TestCommandSetsOnlyWhatSpecsCannot checks that every property atom sets
// is one a spec's sparkConf may not, so a user can never override it.
func TestCommandSetsOnlyWhatSpecsCannot(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"testdata/gpu-node-selector.yaml", "testdata/dynamic-allocation.yaml", "testdata/tolerations.yaml"} {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		j, err := submit(data)
		require.NoError(t, err)
		argv, err := Command(Input{Job: j, DriverPod: "p", Namespace: "atom-jobs", ExecutorPodTemplateFile: "/tmp/t.yaml"})
		require.NoError(t, err)
		for i, a := range argv {
			if a != "--conf" {
				continue
			}
			k, _, _ := strings.Cut(argv[i+1], "=")
			if _, spec := j.Spark.SparkConf[k]; spec {
				continue // the spec's own
			}
			if k == ExecutorPodTemplateConf {
				// Set for a job with tolerations, whose sparkConf may not
				// (testdata/refuse-pod-template-with-tolerations.yaml).
				assert.NotEmpty(t, j.Tolerations)
				continue
			}
			assert.True(t, structs.IsAtomSparkConf(k), "%s: atom sets %s but a spec may too", path, k)
		}
	}
}

func TestTaskGPUAmount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		gpus  int64
		cores int
		want  string
	}{{1, 1, "1"}, {1, 4, "0.25"}, {2, 4, "0.5"}, {2, 3, "0.5"}, {4, 2, "2"}, {3, 2, "1"}, {1, 3, "0.333333333"}, {1, 7, "0.142857142"}} {
		assert.Equal(t, tc.want, TaskGPUAmount(tc.gpus, tc.cores), "%d GPUs, %d cores", tc.gpus, tc.cores)
	}
	// Every executor shape: Spark accepts the amount (whole, or at most
	// 0.5), and the tasks it fits on the GPUs cover the cores.
	for gpus := int64(1); gpus <= structs.MaxAccelsPerNode; gpus++ {
		for cores := 1; cores <= structs.MaxSparkExecutorCores; cores++ {
			a, err := strconv.ParseFloat(TaskGPUAmount(gpus, cores), 64)
			require.NoError(t, err)
			if a >= 1 {
				require.Equal(t, math.Trunc(a), a)
				require.LessOrEqual(t, int64(a)*int64(cores), gpus, "%d GPUs, %d cores", gpus, cores)
				continue
			}
			require.LessOrEqual(t, a, 0.5)
			perGPU := int64(math.Floor(1 / a)) // as Spark computes it
			require.GreaterOrEqual(t, perGPU*gpus, int64(cores), "%d GPUs, %d cores: %v", gpus, cores, a)
			require.Less(t, (perGPU-1)*gpus, int64(cores), "%d GPUs, %d cores: %v shares a GPU more than needed", gpus, cores, a)
		}
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "1g", memory(1<<30))
	assert.Equal(t, "1536m", memory(1536<<20))
	assert.Equal(t, "450m", memory(450<<20))
}
