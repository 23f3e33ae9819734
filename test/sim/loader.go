package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
)

// File names inside the data directory.
const nodeFile = "openb_node_list_all_node.csv"

// podFile returns the pod list file of a trace ("default", "multigpu50",
// "gpuspec33").
func podFile(trace string) string { return "openb_pod_list_" + trace + ".csv" }

// traces lists the pod lists the replay knows, in output order.
var traces = []string{"default", "multigpu50", "gpuspec33"}

// modelTag is the node tag that carries a GPU node's model; gpu_spec
// constraints select on it.
const modelTag = "model"

// node is one row of the node list.
type node struct {
	Name      string
	MilliCPU  int64
	MemoryMiB int64
	GPUs      int64
	Model     string // empty on CPU-only nodes
}

// request is one task of a pod list, normalised for the replay: fractional
// GPU requests are rounded up to one whole GPU and gpu_spec is split into
// the acceptable models.
type request struct {
	Name     string
	MilliCPU int64
	Memory   int64 // bytes
	GPUs     int64
	Models   []string // acceptable GPU models, sorted and deduplicated; nil = any
}

// defaultDataDir finds the testdata directory: test/sim/testdata when run
// from the repository root, testdata when run from test/sim, else the
// directory next to this source file.
func defaultDataDir() string {
	candidates := []string{filepath.Join("test", "sim", "testdata"), "testdata"}
	if _, file, _, ok := runtime.Caller(0); ok {
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "testdata"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(c, nodeFile)); err == nil {
			return c
		}
	}
	return candidates[0]
}

// readCSV reads a CSV file with a header row and returns the rows as maps
// from column name to value. Every column in required must be present.
func readCSV(path string, required ...string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading header: %w", path, err)
	}
	for _, c := range required {
		if !slices.Contains(header, c) {
			return nil, fmt.Errorf("%s: column %q missing (have %s)", path, c, strings.Join(header, ","))
		}
	}
	var rows []map[string]string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		row := make(map[string]string, len(header))
		for i, c := range header {
			row[c] = strings.TrimSpace(rec[i])
		}
		rows = append(rows, row)
	}
}

// parseInts parses the named columns of row as non-negative integers.
func parseInts(row map[string]string, cols ...string) ([]int64, error) {
	out := make([]int64, len(cols))
	for i, c := range cols {
		v, err := strconv.ParseInt(row[c], 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("column %s: %q is not a non-negative integer", c, row[c])
		}
		out[i] = v
	}
	return out, nil
}

// loadNodes reads the node list in file order.
func loadNodes(dir string) ([]node, error) {
	path := filepath.Join(dir, nodeFile)
	rows, err := readCSV(path, "sn", "cpu_milli", "memory_mib", "gpu", "model")
	if err != nil {
		return nil, err
	}
	nodes := make([]node, 0, len(rows))
	for i, row := range rows {
		v, err := parseInts(row, "cpu_milli", "memory_mib", "gpu")
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", path, i+2, err)
		}
		n := node{Name: row["sn"], MilliCPU: v[0], MemoryMiB: v[1], GPUs: v[2], Model: row["model"]}
		if (n.GPUs > 0) != (n.Model != "") {
			return nil, fmt.Errorf("%s row %d: %d GPUs with model %q", path, i+2, n.GPUs, n.Model)
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", path)
	}
	return nodes, nil
}

// loadRequests reads a trace's pod list. The gpu_spec column is optional
// (the multigpu50 list has none).
func loadRequests(dir, trace string) ([]request, error) {
	path := filepath.Join(dir, podFile(trace))
	rows, err := readCSV(path, "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
	if err != nil {
		return nil, err
	}
	reqs := make([]request, 0, len(rows))
	for i, row := range rows {
		r, err := parseRequest(row)
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", path, i+2, err)
		}
		reqs = append(reqs, r)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no tasks", path)
	}
	return reqs, nil
}

// parseRequest reads one pod list row as a request.
func parseRequest(row map[string]string) (request, error) {
	v, err := parseInts(row, "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
	if err != nil {
		return request{}, err
	}
	gpus := v[2]
	if gpus == 0 && v[3] > 0 { // a GPU share without a count: one GPU
		gpus = 1
	}
	return request{
		Name:     row["name"],
		MilliCPU: v[0],
		Memory:   v[1] << 20,
		GPUs:     gpus,
		Models:   parseSpec(row["gpu_spec"]),
	}, nil
}

// parseSpec splits a gpu_spec ("V100M16|V100M32") into sorted, distinct
// models; "" gives nil (any model).
func parseSpec(spec string) []string {
	var models []string
	for m := range strings.SplitSeq(spec, "|") {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	slices.Sort(models)
	return slices.Compact(models)
}

// toNodes converts node rows to atom nodes: ready, in the public pool, GPU
// nodes tagged model=<model> with their GPUs as accelerators of that type.
func toNodes(rows []node) []*structs.Node {
	out := make([]*structs.Node, len(rows))
	for i, r := range rows {
		n := &structs.Node{
			Name:  structs.NodeID(r.Name),
			Pool:  structs.PublicPool,
			State: structs.NodeReady,
			Capacity: structs.Resources{
				MilliCPU: r.MilliCPU,
				Memory:   r.MemoryMiB << 20,
				Accels:   r.GPUs,
			},
		}
		if r.GPUs > 0 {
			n.Capacity.AccelType = r.Model
			n.Tags = map[string]string{modelTag: r.Model}
		}
		out[i] = n
	}
	return out
}

// selector returns the atom label selector for a request's acceptable
// models: "model in (A,B)", or "" for any model.
func (r request) selector() string {
	if len(r.Models) == 0 {
		return ""
	}
	return modelTag + " in (" + strings.Join(r.Models, ",") + ")"
}

// totalGPUs sums the GPUs of nodes.
func totalGPUs(nodes []node) int64 {
	var t int64
	for _, n := range nodes {
		t += n.GPUs
	}
	return t
}
