package structs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sparkJob is a valid spark job up to its spark section.
const sparkJob = "kind: spark\nname: clean\nresources: {cpu: 2, memory: 8Gi}\n"

func TestSparkSection(t *testing.T) {
	t.Parallel()
	mi := int64(1) << 20
	cases := []struct {
		name, spark string
		want        *Spark
	}{{
		name:  "defaults",
		spark: "spark: {mainApplicationFile: local:///opt/spark/jobs/clean.py}",
		want: &Spark{MainApplicationFile: "local:///opt/spark/jobs/clean.py", ServiceAccount: "spark",
			Executor: SparkExecutor{Instances: 2, Cores: 1, Memory: gi}},
	}, {
		name: "everything",
		spark: `spark:
  mainApplicationFile: s3a://jobs/clean.jar
  mainClass: ai.atom.lidar.Clean
  arguments: [--day, "2024-05-01"]
  sparkConf: {spark.sql.shuffle.partitions: "400"}
  executor:
    cores: 4
    memory: 1536Mi
    memoryOverhead: 512Mi
    gpu: {type: A100, amount: 2, vendor: amd.com, discoveryScript: /opt/gpus.sh}
    nodeSelector: {fabric: ib}
  dynamicAllocation: {enabled: true, minExecutors: 1, initialExecutors: 2, maxExecutors: 8}
  serviceAccount: spark-etl
  namespace: data`,
		want: &Spark{MainApplicationFile: "s3a://jobs/clean.jar", MainClass: "ai.atom.lidar.Clean",
			Arguments: []string{"--day", "2024-05-01"}, SparkConf: map[string]string{"spark.sql.shuffle.partitions": "400"},
			Executor: SparkExecutor{Cores: 4, Memory: 1536 * mi, MemoryOverhead: 512 * mi,
				GPU:          &SparkGPU{Type: "A100", Amount: 2, Vendor: "amd.com", DiscoveryScript: "/opt/gpus.sh"},
				NodeSelector: map[string]string{"fabric": "ib"}},
			DynamicAllocation: &SparkDynamicAllocation{MinExecutors: 1, InitialExecutors: 2, MaxExecutors: 8},
			ServiceAccount:    "spark-etl", Namespace: "data"},
	}, {
		name:  "dynamic allocation from its maximum; GPU defaults",
		spark: "spark: {mainApplicationFile: /app.py, executor: {gpu: {type: A100}}, dynamicAllocation: {maxExecutors: 10}}",
		want: &Spark{MainApplicationFile: "/app.py", ServiceAccount: "spark",
			Executor: SparkExecutor{Cores: 1, Memory: gi, GPU: &SparkGPU{Type: "A100", Amount: 1,
				Vendor: "nvidia.com", DiscoveryScript: "/opt/spark/examples/src/main/scripts/getGpusResources.sh"}},
			DynamicAllocation: &SparkDynamicAllocation{MaxExecutors: 10}},
	}, {
		name:  "dynamic allocation switched off",
		spark: "spark: {mainApplicationFile: hdfs://nn/app.py, executor: {instances: 6}, dynamicAllocation: {enabled: false}}",
		want: &Spark{MainApplicationFile: "hdfs://nn/app.py", ServiceAccount: "spark",
			Executor: SparkExecutor{Instances: 6, Cores: 1, Memory: gi}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, err := submit(sparkJob + tc.spark)
			require.NoError(t, err)
			assert.Equal(t, tc.want, j.Spark)
			assert.Equal(t, 1, j.Replicas, "the driver is the only replica")
			require.NoError(t, j.Spark.Check())

			s, err := ParseJobSpec([]byte(sparkJob + tc.spark))
			require.NoError(t, err)
			b, err := json.Marshal(s)
			require.NoError(t, err)
			again, err := submit(string(b))
			require.NoError(t, err, "round trip of %s", b)
			assert.Equal(t, j, again)
		})
	}
}

func TestSparkSectionRejects(t *testing.T) {
	t.Parallel()
	const app = "spark:\n  mainApplicationFile: /app.py\n"
	const appFile = " is not allowed: use a URI such as local:///opt/spark/jobs/clean.py or s3a://bucket/clean.jar, or an absolute path in the image (no spaces, at most 4096 characters)"
	cases := []struct{ name, spec, want string }{
		{"spark section on another kind", "kind: command\nname: x\nresources: {cpu: 1}\n" + app,
			"spark is not allowed for kind command: only kind spark takes a spark section"},
		{"kind spark without a spark section", sparkJob,
			"spark is required for kind spark: give at least spark.mainApplicationFile"},
		{"several replicas", sparkJob + "replicas: 3\n" + app,
			"replicas 3 is not allowed: use 1 (or leave it out): a spark job's one replica is its driver; its executors are spark.executor.instances or spark.dynamicAllocation"},
		{"a command", sparkJob + "command: [echo, hi]\n" + app,
			"command is not allowed for kind spark: the driver runs spark-submit with spark.mainApplicationFile and spark.arguments"},
		{"args", sparkJob + "args: [--day, x]\n" + app,
			"args is not allowed for kind spark: the driver runs spark-submit with spark.mainApplicationFile and spark.arguments"},
		{"no application", sparkJob + "spark: {executor: {cores: 2}}",
			"spark.mainApplicationFile is required: name the application, such as local:///opt/spark/jobs/clean.py or s3a://bucket/clean.jar"},
		{"relative application", sparkJob + "spark: {mainApplicationFile: clean.py}",
			`spark.mainApplicationFile "clean.py"` + appFile},
		{"local URI with a host", sparkJob + "spark: {mainApplicationFile: \"local://opt/app.py\"}",
			`spark.mainApplicationFile "local://opt/app.py"` + appFile},
		{"bucket without a key", sparkJob + "spark: {mainApplicationFile: \"s3a://bucket\"}", `spark.mainApplicationFile "s3a://bucket"` + appFile},
		{"bad main class", sparkJob + app + "  mainClass: org..Clean",
			`spark.mainClass "org..Clean" is not allowed: use a fully qualified class name such as org.example.Clean`},
		{"min above max", sparkJob + app + "  dynamicAllocation: {minExecutors: 5, maxExecutors: 3}",
			"spark.dynamicAllocation.minExecutors 5 is not allowed: use at most maxExecutors (3)"},
		{"initial below min", sparkJob + app + "  dynamicAllocation: {minExecutors: 2, initialExecutors: 1, maxExecutors: 8}",
			"spark.dynamicAllocation.initialExecutors 1 is not allowed: use minExecutors (2) to maxExecutors (8)"},
		{"initial above max", sparkJob + app + "  dynamicAllocation: {initialExecutors: 9, maxExecutors: 8}",
			"spark.dynamicAllocation.initialExecutors 9 is not allowed: use minExecutors (0) to maxExecutors (8)"},
		{"no maximum", sparkJob + app + "  dynamicAllocation: {minExecutors: 2}",
			"spark.dynamicAllocation.maxExecutors is required with dynamic allocation: name the most executors the job may run (they are charged to its quota)"},
		{"zero maximum", sparkJob + app + "  dynamicAllocation: {maxExecutors: 0}",
			"spark.dynamicAllocation.maxExecutors 0 is not allowed: use 1 to 10000"},
		{"negative minimum", sparkJob + app + "  dynamicAllocation: {minExecutors: -1, maxExecutors: 4}",
			"spark.dynamicAllocation.minExecutors -1 is not allowed: use 0 to 10000"},
		{"bounds while disabled", sparkJob + app + "  dynamicAllocation: {enabled: false, maxExecutors: 4}",
			"spark.dynamicAllocation.enabled false is not allowed: minExecutors, initialExecutors and maxExecutors need dynamic allocation: enable it or drop them"},
		{"instances with dynamic allocation", sparkJob + app + "  executor: {instances: 4}\n  dynamicAllocation: {maxExecutors: 4}",
			"spark.executor.instances 4 is not allowed: dynamic allocation sizes the executors: use spark.dynamicAllocation.initialExecutors"},
		{"zero instances", sparkJob + app + "  executor: {instances: 0}", "spark.executor.instances 0 is not allowed: use 1 to 10000"},
		{"negative instances", sparkJob + app + "  executor: {instances: -3}", "spark.executor.instances -3 is not allowed: use 1 to 10000"},
		{"zero cores", sparkJob + app + "  executor: {cores: 0}", "spark.executor.cores 0 is not allowed: use 1 to 1024 whole cores"},
		{"negative cores", sparkJob + app + "  executor: {cores: -2}", "spark.executor.cores -2 is not allowed: use 1 to 1024 whole cores"},
		{"fractional cores", sparkJob + app + "  executor: {cores: 1.5}", "spark.executor.cores 1.5 is not allowed: use a whole number"},
		{"millicores", sparkJob + app + "  executor: {cores: 500m}", "spark.executor.cores (a string) is not allowed: use a whole number"},
		{"memory not in MiB", sparkJob + app + "  executor: {memory: 1G}",
			`spark.executor.memory "1G" is not allowed: use whole mebibytes, such as 512Mi or 16Gi: Spark counts memory in MiB`},
		{"too little memory", sparkJob + app + "  executor: {memory: 256Mi}",
			`spark.executor.memory "256Mi" is not allowed: use at least 450Mi: Spark starts no executor with less`},
		{"negative memory", sparkJob + app + "  executor: {memory: -1Gi}", `spark.executor.memory "-1Gi" is not allowed: use 0 or more`},
		{"zero overhead", sparkJob + app + "  executor: {memoryOverhead: 0}",
			`spark.executor.memoryOverhead "0" is not allowed: use at least 1Mi, or leave it out for Spark's default (10% of memory, at least 384Mi)`},
		{"GPUs without a type", sparkJob + app + "  executor: {gpu: {amount: 2}}",
			"spark.executor.gpu.type is required with executor GPUs: name the accelerator type, such as A100, that executors run on and are charged for"},
		{"GPUs of any type", sparkJob + app + "  executor: {gpu: {type: any}}",
			`spark.executor.gpu.type "any" is not allowed: name one accelerator type, such as A100: executors are charged to gpu/<type> quota`},
		{"zero GPUs", sparkJob + app + "  executor: {gpu: {type: A100, amount: 0}}",
			"spark.executor.gpu.amount 0 is not allowed: use 1 to 64 (accelerators on one node)"},
		{"bad GPU vendor", sparkJob + app + "  executor: {gpu: {type: A100, vendor: NVIDIA}}",
			`spark.executor.gpu.vendor "NVIDIA" is not allowed: use the device plugin's vendor domain, such as nvidia.com or amd.com`},
		{"relative discovery script", sparkJob + app + "  executor: {gpu: {type: A100, discoveryScript: gpus.sh}}",
			`spark.executor.gpu.discoveryScript "gpus.sh" is not allowed: use the absolute path of a script in the image, such as /opt/spark/examples/src/main/scripts/getGpusResources.sh`},
		{"bad node selector", sparkJob + app + "  executor: {nodeSelector: {\"a b\": x}}", `spark.executor.nodeSelector "a b" is not allowed: use a label key: name part must consist of alphanumeric characters, '-', '_' or '.', ` +
			"and must start and end with an alphanumeric character (e.g. 'MyName' or 'my.name' or '123-abc')"},
		{"conf atom sets", sparkJob + app + "  sparkConf: {spark.executor.cores: \"8\"}",
			`spark.sparkConf["spark.executor.cores"] is not allowed: atom sets spark.executor.cores itself: use spark.executor.cores`},
		{"conf prefix atom sets", sparkJob + app + "  sparkConf: {spark.kubernetes.executor.node.selector.zone: a}",
			`spark.sparkConf["spark.kubernetes.executor.node.selector.zone"] is not allowed: atom sets spark.kubernetes.executor.node.selector.* itself: use spark.executor.nodeSelector`},
		{"conf of the driver pod", sparkJob + app + "  sparkConf: {spark.kubernetes.driver.pod.name: p}",
			`spark.sparkConf["spark.kubernetes.driver.pod.name"] is not allowed: atom sets spark.kubernetes.driver.pod.name itself`},
		{"conf that is not Spark's", sparkJob + app + "  sparkConf: {fs.s3a.endpoint: x}",
			`spark.sparkConf "fs.s3a.endpoint" is not allowed: use a Spark property name: spark. and up to 250 more characters, without spaces or '='`},
		{"conf with a control character", sparkJob + app + "  sparkConf: {spark.x: \"a\\x01\"}",
			`spark.sparkConf["spark.x"] "a\x01" is not allowed: use printable text only (no control characters)`},
		{"bad service account", sparkJob + app + "  serviceAccount: Spark_SA", `spark.serviceAccount "Spark_SA" is not allowed: use a service account name: a lowercase RFC 1123 subdomain must consist of lower case ` +
			"alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')"},
		{"bad namespace", sparkJob + app + "  namespace: Data", `spark.namespace "Data" is not allowed: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', ` +
			"and must start and end with an alphanumeric character (e.g. 'my-name' or '123-abc')"},
		{"unknown field", sparkJob + app + "  executor: {gpus: 1}",
			"spark.executor.gpus is not a known field (did you mean gpu?): use instances, cores, coreRequest, memory, memoryOverhead, gpu, nodeSelector"},
		{"core request of none", sparkJob + app + "  executor: {coreRequest: \"0\"}",
			`spark.executor.coreRequest "0" is not allowed: use more than 0`},
		{"core request not a quantity", sparkJob + app + "  executor: {coreRequest: half}",
			`spark.executor.coreRequest "half" is not allowed: use a quantity such as 500m or 4`},
		{"conf of the executors' CPU request", sparkJob + app + "  sparkConf: {spark.kubernetes.executor.request.cores: 500m}",
			`spark.sparkConf["spark.kubernetes.executor.request.cores"] is not allowed: atom sets spark.kubernetes.executor.request.cores itself: use spark.executor.coreRequest`},
		{"conf of the driver's heap", sparkJob + app + "  sparkConf: {spark.driver.memory: 4g}",
			`spark.sparkConf["spark.driver.memory"] is not allowed: atom sets spark.driver.memory itself: use resources.memory or spark.driver.memory (the driver's heap is its memory less Spark's overhead)`},
		{"conf of the driver's cores", sparkJob + app + "  sparkConf: {spark.driver.cores: \"4\"}",
			`spark.sparkConf["spark.driver.cores"] is not allowed: atom sets spark.driver.cores itself: use resources.cpu or spark.driver.cores`},
		{"conf of the driver's GPUs", sparkJob + app + "  sparkConf: {spark.driver.resource.gpu.discoveryScript: /x.sh}",
			`spark.sparkConf["spark.driver.resource.gpu.discoveryScript"] is not allowed: atom sets spark.driver.resource.gpu.* itself: use resources.accelerators (the driver's GPUs)`},
		{"conf of the master", sparkJob + app + "  sparkConf: {spark.master: \"local[*]\"}",
			`spark.sparkConf["spark.master"] is not allowed: atom sets spark.master itself`},
		{"conf of the scheduler", sparkJob + app + "  sparkConf: {spark.kubernetes.scheduler.name: volcano}",
			`spark.sparkConf["spark.kubernetes.scheduler.name"] is not allowed: atom sets spark.kubernetes.scheduler.name itself`},
		{"driver and resources", sparkJob + app + "  driver: {cores: 2}",
			"spark.driver is not allowed with resources: both size the driver (the job's replica 0): give spark.driver (cores, memory) or resources (cpu, memory, accelerators), not both"},
		{"driver without cores", driverJob + "  driver: {cores: 0}", "spark.driver.cores 0 is not allowed: use 1 to 1024 whole cores"},
		{"driver of fractional cores", driverJob + "  driver: {cores: 1.5}", "spark.driver.cores 1.5 is not allowed: use a whole number"},
		{"driver heap too small", driverJob + "  driver: {memory: 256Mi}",
			`spark.driver.memory "256Mi" is not allowed: use at least 450Mi: Spark starts no driver with less`},
		{"driver heap not in MiB", driverJob + "  driver: {memory: 1G}",
			`spark.driver.memory "1G" is not allowed: use whole mebibytes, such as 512Mi or 16Gi: Spark counts memory in MiB`},
		{"driver heap overflowing", driverJob + "  driver: {memory: 8Ei}",
			`spark.driver.memory "8Ei" is not allowed: it overflows 64 bits: use less than 9223372036854775807 bytes`},
		{"driver heap and overhead overflowing", driverJob + "  driver: {memory: 8388607Ti}",
			`spark.driver.memory "8388607Ti" is not allowed: it overflows 64 bits: ask for less`},
		{"driver field the Operator has, atom not", driverJob + "  driver: {coreLimit: 1200m}",
			"spark.driver.coreLimit is not a known field (did you mean cores?): use cores, memory"},
		{"driver memory too small", "kind: spark\nname: clean\nresources: {cpu: 1, memory: 512Mi}\n" + app,
			`resources.memory "512Mi" is not allowed: a spark job's driver needs at least 834Mi: Spark's least heap (450Mi) and its memory overhead (384Mi); or give spark.driver.memory, the heap`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := submit(tc.spec)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// driverJob is a spark job without resources, up to its driver section.
const driverJob = "kind: spark\nname: clean\nspark:\n  mainApplicationFile: /app.py\n"

// spark.driver sizes the job's replica 0 as the Spark Operator sizes a
// driver Pod: cores, and the heap plus Spark's overhead; it is charged so.
func TestSparkDriver(t *testing.T) {
	t.Parallel()
	mi := int64(1) << 20
	cases := []struct {
		driver string
		want   Resources
		heap   int64
	}{
		{"  driver: {cores: 2, memory: 4Gi}", Resources{MilliCPU: 2000, Memory: 4096*mi + 409*mi}, 4096 * mi},
		{"  driver: {memory: 1536Mi}", Resources{MilliCPU: 1000, Memory: 1536*mi + 384*mi}, 1536 * mi},
		{"  driver: {}", Resources{MilliCPU: 1000, Memory: 1024*mi + 384*mi}, 1024 * mi},
	}
	for _, tc := range cases {
		j, err := submit(driverJob + tc.driver)
		require.NoError(t, err, tc.driver)
		assert.Equal(t, tc.want, j.Resources, tc.driver)
		assert.Equal(t, tc.heap, SparkDriverHeap(j.Resources.Memory), "%s: the heap atom gives the driver is spark.driver.memory again", tc.driver)
		charge := JobCharge(j, j.ShapeAt(0), 1)
		assert.Equal(t, tc.want.MilliCPU+int64(j.Spark.MaxExecutors())*1000, charge[KeyCPU], "%s: charged for the driver and its executors", tc.driver)
		assert.Equal(t, tc.want.Memory+int64(j.Spark.MaxExecutors())*(gi+384*mi), charge[KeyMemory], "%s: charged for the driver and its executors", tc.driver)
	}
}

// SparkDriverHeap inverts Spark's overhead rule: heap + max(384Mi, 10%)
// within the allocation, whole MiB.
func TestSparkDriverHeap(t *testing.T) {
	t.Parallel()
	mi := int64(1) << 20
	for _, tc := range []struct{ alloc, heap int64 }{
		{0, 0}, {383 * mi, 0}, {384 * mi, 0}, {385 * mi, mi}, {834 * mi, 450 * mi},
		{1408 * mi, 1024 * mi}, {4224 * mi, 3840 * mi}, {8 << 30, 7448 * mi}, {8<<30 + mi - 1, 7448 * mi},
	} {
		assert.Equal(t, tc.heap, SparkDriverHeap(tc.alloc), "alloc %d MiB", tc.alloc/mi)
	}
	for h := int64(450) * mi; h < 20000*mi; h += 97 * mi {
		require.Equal(t, h, SparkDriverHeap(h+SparkMemoryOverhead(h)), "heap %d MiB", h/mi)
	}
}

func TestSparkCheck(t *testing.T) {
	t.Parallel()
	ok := func() *Spark {
		return &Spark{MainApplicationFile: "/app.py", ServiceAccount: "spark",
			Executor:          SparkExecutor{Cores: 2, Memory: gi, GPU: &SparkGPU{Type: "A100", Amount: 1, Vendor: "nvidia.com", DiscoveryScript: "/gpus.sh"}},
			DynamicAllocation: &SparkDynamicAllocation{MinExecutors: 1, InitialExecutors: 2, MaxExecutors: 4}}
	}
	require.NoError(t, ok().Check())
	assert.Equal(t, 4, ok().MaxExecutors())
	fixed := ok()
	fixed.DynamicAllocation, fixed.Executor.Instances = nil, 3
	require.NoError(t, fixed.Check())
	assert.Equal(t, 3, fixed.MaxExecutors())

	// Jobs built in code get the checks the spec parser makes.
	cases := []struct {
		name string
		edit func(*Spark)
		want string
	}{
		{"min above max", func(s *Spark) { s.DynamicAllocation.MinExecutors = 5 },
			"spark.dynamicAllocation.minExecutors 5 is not allowed: use at most maxExecutors (4)"},
		{"initial outside", func(s *Spark) { s.DynamicAllocation.InitialExecutors = 0 },
			"spark.dynamicAllocation.initialExecutors 0 is not allowed: use minExecutors (1) to maxExecutors (4)"},
		{"GPUs without a type", func(s *Spark) { s.Executor.GPU.Type = "" },
			`spark.executor.gpu.type "" is not allowed: name one accelerator type, such as A100`},
		{"no GPUs", func(s *Spark) { s.Executor.GPU.Amount = 0 }, "spark.executor.gpu.amount 0 is not allowed: use 1 or more"},
		{"no vendor", func(s *Spark) { s.Executor.GPU.Vendor = "" }, "spark.executor.gpu needs a vendor and a discoveryScript"},
		{"no application", func(s *Spark) { s.MainApplicationFile = "" }, "spark.mainApplicationFile is required"},
		{"no cores", func(s *Spark) { s.Executor.Cores = 0 }, "spark.executor.cores 0 is not allowed: use 1 or more whole cores"},
		{"memory not in MiB", func(s *Spark) { s.Executor.Memory++ },
			"spark.executor.memory 1073741825 is not allowed: use whole MiB (memoryOverhead 0 bytes)"},
		{"no service account", func(s *Spark) { s.ServiceAccount = "" }, "spark.serviceAccount is required"},
		{"instances and dynamic allocation", func(s *Spark) { s.Executor.Instances = 2 },
			"spark.executor.instances 2 is not allowed: dynamic allocation sizes the executors"},
		{"no executors", func(s *Spark) { s.DynamicAllocation = nil }, "spark.executor.instances 0 is not allowed: use 1 or more"},
	}
	for _, tc := range cases {
		s := ok()
		tc.edit(s)
		assert.EqualError(t, s.Check(), tc.want, tc.name)
	}
}

func TestIsAtomSparkConf(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"spark.executor.cores", "spark.kubernetes.scheduler.name", "spark.kubernetes.executor.scheduler.name",
		"spark.executor.resource.gpu.amount", "spark.task.resource.gpu.amount", "spark.kubernetes.node.selector.zone",
		"spark.kubernetes.executor.label.atom.io/job", "spark.dynamicAllocation.shuffleTracking.enabled",
		"spark.master", "spark.driver.memory", "spark.driver.cores", "spark.driver.resource.gpu.amount"} {
		assert.True(t, IsAtomSparkConf(k), k)
	}
	for _, k := range []string{"spark.sql.shuffle.partitions", "spark.executor.resource.fpga.amount", "spark.kubernetes.executor.label.team",
		"spark.driver.memoryOverhead", "spark.executor.coresX", "spark.dynamicAllocation.executorIdleTimeout", "spark.local.dir"} {
		assert.False(t, IsAtomSparkConf(k), k)
	}
}

// An executor's core request is what its Pod asks and is charged, instead
// of its cores.
func TestSparkExecutorCoreRequest(t *testing.T) {
	t.Parallel()
	const app = "spark:\n  mainApplicationFile: /app.py\n"
	j, err := submit(sparkJob + app + "  executor: {cores: 2, coreRequest: 500m, memory: 1Gi}\n  dynamicAllocation: {maxExecutors: 3}")
	require.NoError(t, err)
	assert.Equal(t, 2, j.Spark.Executor.Cores)
	assert.Equal(t, Resources{MilliCPU: 500, Memory: 1<<30 + 384<<20}, j.Spark.ExecutorResources())
	assert.Equal(t, int64(1500), j.Spark.ExecutorCharge()[KeyCPU])
	j, err = submit(sparkJob + app + "  executor: {cores: 2}")
	require.NoError(t, err)
	assert.Equal(t, int64(2000), j.Spark.ExecutorResources().MilliCPU)
}
