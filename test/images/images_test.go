package images_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's root directory.
func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

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

// parse splits a Dockerfile into its stages (instructions before the first
// FROM, ARGs, are dropped).
func parse(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var stages []stage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instr{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			from, name, _ := strings.Cut(in.args, " AS ")
			stages = append(stages, stage{from: strings.TrimSpace(from), name: strings.TrimSpace(name)})
			return
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
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
	return stages
}

// TestDockerfiles: every image builds its binary from this repository's
// source with golang:1.26, copies nothing the repository lacks, takes
// binaries only from its own earlier stages, and ends with the binary as
// ENTRYPOINT.
func TestDockerfiles(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "images", "*", "Dockerfile"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(filepath.Dir(f)))
	}
	assert.ElementsMatch(t, []string{"coordinator", "cpu", "cuda", "openmpi", "spark"}, names)

	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		t.Run(name, func(t *testing.T) {
			stages := parse(t, f)
			require.GreaterOrEqual(t, len(stages), 2, "multi-stage")
			binary, entry := "atom", `["/app/atom"]`
			if name == "coordinator" {
				binary, entry = "coordinator", `["/app/coordinator"]`
			}
			golang, built := false, false
			defined := map[string]bool{}
			for i, s := range stages {
				golang = golang || strings.HasPrefix(s.from, "golang:1.26")
				for _, in := range s.instrs {
					switch in.cmd {
					case "RUN":
						if strings.Contains(in.args, "go build") && strings.Contains(in.args, "-o /out/"+binary+" ./"+binary) {
							built = true
						}
					case "COPY":
						fields := strings.Fields(in.args)
						if from, ok := strings.CutPrefix(fields[0], "--from="); ok {
							assert.True(t, defined[from], "stage %d copies from %q, not an earlier stage", i, from)
							continue
						}
						for _, src := range fields[:len(fields)-1] {
							_, err := os.Stat(filepath.Join(root, src))
							assert.NoError(t, err, "COPY %s: the repository has no such file", src)
						}
					}
				}
				if s.name != "" {
					defined[s.name] = true
				}
			}
			assert.True(t, golang, "a stage is FROM golang:1.26")
			assert.True(t, built, "a stage runs go build -o /out/%s ./%s", binary, binary)

			last := stages[len(stages)-1]
			var entrypoint string
			var copies []string
			for _, in := range last.instrs {
				switch in.cmd {
				case "ENTRYPOINT":
					entrypoint = in.args
				case "COPY":
					copies = append(copies, in.args)
				}
			}
			var got []string
			require.NoError(t, json.Unmarshal([]byte(entrypoint), &got), "ENTRYPOINT in exec form")
			var want []string
			require.NoError(t, json.Unmarshal([]byte(entry), &want))
			assert.Equal(t, want, got)
			target := "/app/" + binary
			if name == "spark" {
				target = "/app/atom-agent" // /app/atom is images/spark/atom.sh
				assert.Contains(t, copies, "images/spark/atom.sh /app/atom")
			}
			assert.True(t, slices.ContainsFunc(copies, func(c string) bool {
				return strings.HasPrefix(c, "--from=") && strings.HasSuffix(c, "/out/"+binary+" "+target)
			}), "the last stage copies the built %s to %s: %q", binary, target, copies)
		})
	}
}
