package images_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/atom-sched/atom/test/images/imagestest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// instr is one Dockerfile instruction, continuation lines joined.
type instr struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// stage is one FROM and what follows it.
type stage struct {
	from, name string
	instrs     []instr
}

// dockerfile is a parsed Dockerfile: the ARGs before the first FROM, then
// its stages.
type dockerfile struct {
	args   map[string]string // global ARG name -> default ("" when none)
	stages []stage
}

// parse reads a Dockerfile.
func parse(t *testing.T, path string) dockerfile {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	d := dockerfile{args: map[string]string{}}
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instr{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		switch {
		case in.cmd == "FROM":
			from, name, _ := strings.Cut(in.args, " AS ")
			d.stages = append(d.stages, stage{from: strings.TrimSpace(from), name: strings.TrimSpace(name)})
		case len(d.stages) > 0:
			d.stages[len(d.stages)-1].instrs = append(d.stages[len(d.stages)-1].instrs, in)
		case in.cmd == "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			d.args[k] = v
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") && cur.Len() == 0 {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	require.NoError(t, sc.Err())
	flush()
	return d
}

// stageNamed returns the stage called name.
func (d dockerfile) stageNamed(name string) (stage, bool) {
	for _, s := range d.stages {
		if s.name == name {
			return s, true
		}
	}
	return stage{}, false
}

// TestDockerfiles: every image takes its binary from a stage `build`,
// FROM ${ATOM_FROM}, which is either `source` (the default: built from this
// repository's source with golang:1.26) or `host` (FROM scratch, the
// binary images/build.sh builds on the host); copies nothing the
// repository (or images/build.sh) lacks, takes binaries only from its own
// earlier stages, and ends with the binary as ENTRYPOINT.
func TestDockerfiles(t *testing.T) {
	root := imagestest.RepoRoot()
	files, err := filepath.Glob(filepath.Join(root, "images", "*", "Dockerfile"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(filepath.Dir(f)))
	}
	assert.ElementsMatch(t, []string{"coordinator", "cpu", "cuda", "openmpi", "spark"}, names)
	script, err := os.ReadFile(filepath.Join(root, "images", "build.sh"))
	require.NoError(t, err)

	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		t.Run(name, func(t *testing.T) {
			d := parse(t, f)
			require.GreaterOrEqual(t, len(d.stages), 4, "source, host, build and the image")
			binary, entry := "atom", `["/app/atom"]`
			if name == "coordinator" {
				binary, entry = "coordinator", `["/app/coordinator"]`
			}
			assert.Equal(t, "source", d.args["ATOM_FROM"], "ARG ATOM_FROM=source before the first FROM")

			// source: golang:1.26, go build -o /out/BINARY ./BINARY.
			src, ok := d.stageNamed("source")
			if assert.True(t, ok, "a stage named source") {
				assert.True(t, strings.HasPrefix(src.from, "golang:1.26"), "source is FROM golang:1.26: %s", src.from)
				assert.True(t, slices.ContainsFunc(src.instrs, func(in instr) bool {
					return in.cmd == "RUN" && strings.Contains(in.args, "go build") && strings.Contains(in.args, "-o /out/"+binary+" ./"+binary)
				}), "source runs go build -o /out/%s ./%s", binary, binary)
			}
			// host: scratch plus the binary images/build.sh builds.
			host, ok := d.stageNamed("host")
			if assert.True(t, ok, "a stage named host") {
				assert.Equal(t, "scratch", host.from)
				assert.Equal(t, []instr{{cmd: "COPY", args: "bin/images/" + binary + " /out/" + binary}}, host.instrs)
				assert.Contains(t, string(script), "-o bin/images/"+binary+" ./"+binary, "images/build.sh builds bin/images/%s", binary)
			}
			build, ok := d.stageNamed("build")
			if assert.True(t, ok, "a stage named build") {
				assert.Equal(t, "${ATOM_FROM}", build.from)
				assert.Empty(t, build.instrs)
			}

			defined := map[string]bool{}
			for i, s := range d.stages {
				for _, in := range s.instrs {
					if in.cmd != "COPY" && in.cmd != "ADD" {
						continue
					}
					fields := strings.Fields(in.args)
					if from, ok := strings.CutPrefix(fields[0], "--from="); ok {
						assert.True(t, defined[from], "stage %d copies from %q, not an earlier stage", i, from)
						continue
					}
					for _, src := range fields[:len(fields)-1] {
						if strings.HasPrefix(src, "bin/images/") {
							continue // built by images/build.sh, checked above
						}
						_, err := os.Stat(filepath.Join(root, src))
						assert.NoError(t, err, "COPY %s: the repository has no such file", src)
					}
				}
				if s.name != "" {
					defined[s.name] = true
				}
			}

			last := d.stages[len(d.stages)-1]
			var entrypoint string
			var copies, env []string
			for _, in := range last.instrs {
				switch in.cmd {
				case "ENTRYPOINT":
					entrypoint = in.args
				case "COPY":
					copies = append(copies, in.args)
				case "ENV":
					env = append(env, in.args)
				}
			}
			var got []string
			require.NoError(t, json.Unmarshal([]byte(entrypoint), &got), "ENTRYPOINT in exec form")
			var want []string
			require.NoError(t, json.Unmarshal([]byte(entry), &want))
			assert.Equal(t, want, got)
			target := "/app/" + binary
			switch name {
			case "spark":
				target = "/app/atom-agent" // /app/atom is images/spark/atom.sh
				assert.Contains(t, copies, "images/spark/atom.sh /app/atom")
				assert.Contains(t, copies, "images/spark/entrypoint.sh /opt/entrypoint.sh")
				assert.Contains(t, strings.Join(env, " "), "SPARK_HOME=/opt/spark")
				assert.Equal(t, "debian:bookworm-slim", last.from)
			case "openmpi":
				assert.Equal(t, "${BASE}", last.from, "openmpi adds to BASE")
				assert.Equal(t, "nvidia/cuda:${CUDA}-runtime-ubuntu24.04", d.args["BASE"], "BASE is the CUDA runtime unless told otherwise")
			case "cpu", "coordinator":
				assert.Equal(t, "debian:bookworm-slim", last.from)
			}
			assert.Contains(t, copies, "--from=build /out/"+binary+" "+target,
				"the last stage copies the built %s to %s", binary, target)
		})
	}
}

// TestSparkEntrypoint: images/spark/entrypoint.sh starts an executor as
// Apache Spark's image does, from the variables Spark sets on its executor
// Pods, and a cluster-mode driver as spark-submit in client mode; atom.sh
// hands those two to it and everything else to atom. Run here with a tini
// that prints its arguments.
func TestSparkEntrypoint(t *testing.T) {
	root := imagestest.RepoRoot()
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "tini"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755))
	run := func(env []string, args ...string) []string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "images", "spark", "entrypoint.sh"), args...)
		cmd.Dir = bin
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "SPARK_HOME=/opt/spark"}, env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	}

	env := []string{
		"SPARK_DRIVER_URL=spark://CoarseGrainedScheduler@10.0.0.5:7078",
		"SPARK_EXECUTOR_ID=3", "SPARK_EXECUTOR_CORES=2", "SPARK_EXECUTOR_MEMORY=1024m",
		"SPARK_APPLICATION_ID=spark-app-1", "SPARK_EXECUTOR_POD_IP=10.0.0.9",
		"SPARK_EXECUTOR_POD_NAME=job-1-exec-3", "SPARK_RESOURCE_PROFILE_ID=0",
		"SPARK_EXTRA_CLASSPATH=/extra/*",
	}
	for i := range 12 { // 10 and 11 after 9
		env = append(env, "SPARK_JAVA_OPT_"+strconv.Itoa(i)+"=-Dopt"+strconv.Itoa(i))
	}
	var opts []string
	for i := range 12 {
		opts = append(opts, "-Dopt"+strconv.Itoa(i))
	}
	want := append([]string{"-s", "--", "java"}, opts...)
	want = append(want, "-Xms1024m", "-Xmx1024m",
		"-cp", "/opt/spark/conf:/opt/spark/jars/*:/extra/*:"+bin,
		"org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
		"--driver-url", "spark://CoarseGrainedScheduler@10.0.0.5:7078",
		"--executor-id", "3", "--cores", "2", "--app-id", "spark-app-1",
		"--hostname", "10.0.0.9", "--resourceProfileId", "0", "--podName", "job-1-exec-3")
	assert.Equal(t, want, run(env, "executor"))

	assert.Equal(t, []string{"-s", "--", "/opt/spark/bin/spark-submit",
		"--conf", "spark.driver.bindAddress=10.0.0.7",
		"--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=10.0.0.7",
		"--deploy-mode", "client", "--class", "Main", "local:///app.jar"},
		run([]string{"SPARK_DRIVER_BIND_ADDRESS=10.0.0.7"}, "driver", "--class", "Main", "local:///app.jar"))

	assert.Equal(t, []string{"hello"}, run(nil, "echo", "hello"), "anything else runs as given")

	dispatch, err := os.ReadFile(filepath.Join(root, "images", "spark", "atom.sh"))
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`(?m)^driver \| executor\) exec /opt/entrypoint.sh "\$@" ;;$`), string(dispatch))
	assert.Contains(t, string(dispatch), `exec /app/atom-agent "$@"`)
}
