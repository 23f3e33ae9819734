package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// Simulated lists the accelerators of a simulated node (the local backend's
// nodes have no GPUs of their own): the allocated indices, of the allocated
// model, healthy unless Faults says otherwise. It stands in for NVML at the
// hardware boundary only; the preflight's checks run unchanged.
type Simulated struct {
	Node   string
	Model  string
	Want   []int
	Faults map[int]string // index -> "ecc" or "retired-pages"
}

// Devices implements Lister.
func (s Simulated) Devices() ([]Device, error) {
	out := make([]Device, 0, len(s.Want))
	for _, i := range s.Want {
		d := Device{Index: i, UUID: fmt.Sprintf("GPU-sim-%s-%d", s.Node, i), Name: "Simulated " + s.Model}
		switch s.Faults[i] {
		case "ecc":
			d.UncorrectableECC = 1
		case "retired-pages":
			d.RetiredPagesPending = true
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseFaults reads "2:ecc,5:retired-pages" (ATOM_SIMULATED_GPU_FAULTS).
func ParseFaults(s string) (map[int]string, error) {
	out := map[int]string{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		is, kind, ok := strings.Cut(f, ":")
		i, err := strconv.Atoi(is)
		if !ok || err != nil || i < 0 || (kind != "ecc" && kind != "retired-pages") {
			return nil, fmt.Errorf("simulated GPU fault %q: use INDEX:ecc or INDEX:retired-pages, comma-separated", f)
		}
		out[i] = kind
	}
	return out, nil
}
