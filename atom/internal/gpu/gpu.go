// Package gpu is atom's accelerator preflight: before a job starts, the
// GPUs the container sees must be the ones the coordinator allocated
// (count and model) and healthy (no uncorrectable ECC errors, no page
// retirement pending).
//
// Hardware access sits behind Lister so the check runs on CPU-only CI; the
// real Lister (NVML) lives in nvml.go.
package gpu

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotAvailable means NVML (the driver library) is not on this machine:
// a CPU machine, or a container started without the NVIDIA runtime.
var ErrNotAvailable = errors.New("NVML is not available")

// Device is one GPU as NVML reports it.
type Device struct {
	Index               int
	UUID, Name          string
	UncorrectableECC    uint64 // volatile uncorrectable ECC errors since the driver loaded
	RetiredPagesPending bool   // a page retirement waits for a reset
}

// Lister lists the GPUs visible here; it returns ErrNotAvailable (wrapped
// or not) when there is no NVML.
type Lister interface {
	Devices() ([]Device, error)
}

// Want is what the coordinator allocated.
type Want struct {
	Accelerators []int  // allocated device indices; empty means none
	Type         string // accelerator type, such as "A100"; empty accepts any model
	// HostGPUs: every GPU of the node is visible (a process on the host,
	// as with the local backend on a GPU machine), not only the allocated
	// ones (a container given its GPUs). The allocated indices must be
	// among the visible ones and only they are checked.
	HostGPUs bool
}

// Result is what the preflight saw.
type Result struct {
	Available bool     // NVML answered
	Devices   []Device // the visible GPUs
}

// UUIDs returns the visible devices' UUIDs in order.
func (r Result) UUIDs() []string {
	out := make([]string, 0, len(r.Devices))
	for _, d := range r.Devices {
		out = append(out, d.UUID)
	}
	return out
}

// CheckError is a failed preflight; Check names the check that failed
// (nvml, list, count, type, ecc, retired-pages). Accelerators lists the
// allocated indices (from Want) of the GPUs that failed, matched by
// position among the visible GPUs; it is empty when the check cannot tell
// which (nvml, list, count).
type CheckError struct {
	Check        string
	Detail       string
	Accelerators []int
}

func (e *CheckError) Error() string {
	return "gpu preflight failed: " + e.Check + ": " + e.Detail
}

// Preflight runs the checks against what l lists. Without NVML it passes
// only when no accelerators were allocated.
func Preflight(l Lister, w Want) (Result, error) {
	devs, err := l.Devices()
	switch {
	case errors.Is(err, ErrNotAvailable):
		if len(w.Accelerators) > 0 {
			return Result{}, &CheckError{Check: "nvml", Detail: fmt.Sprintf("accelerators allocated but NVML is not available (%d %s allocated)", len(w.Accelerators), orAny(w.Type))}
		}
		return Result{}, nil
	case err != nil:
		return Result{}, &CheckError{Check: "list", Detail: err.Error()}
	}
	if w.HostGPUs {
		if devs, err = pick(devs, w.Accelerators); err != nil {
			return Result{Available: true}, err
		}
	}
	res := Result{Available: true, Devices: devs}
	if len(devs) != len(w.Accelerators) {
		return res, &CheckError{Check: "count", Detail: fmt.Sprintf("%d GPUs visible, %d allocated", len(devs), len(w.Accelerators))}
	}
	// Every GPU is checked, so one report names all the bad ones; the
	// first failure names the check.
	var fail *CheckError
	var details []string
	for p, d := range devs {
		check, detail := checkDevice(d, w.Type)
		if check == "" {
			continue
		}
		if fail == nil {
			fail = &CheckError{Check: check}
		}
		fail.Accelerators = append(fail.Accelerators, w.Accelerators[p])
		details = append(details, detail)
	}
	if fail != nil {
		fail.Detail = strings.Join(details, "; ")
		return res, fail
	}
	return res, nil
}

// pick returns the devices with the allocated indices, in their order.
func pick(devs []Device, want []int) ([]Device, error) {
	byIndex := map[int]Device{}
	for _, d := range devs {
		byIndex[d.Index] = d
	}
	out := make([]Device, 0, len(want))
	for _, i := range want {
		d, ok := byIndex[i]
		if !ok {
			return nil, &CheckError{Check: "count", Detail: fmt.Sprintf("GPU %d allocated but the host has %d GPUs", i, len(devs)), Accelerators: []int{i}}
		}
		out = append(out, d)
	}
	return out, nil
}

// checkDevice returns the first check d fails and what it found, or "".
func checkDevice(d Device, typ string) (check, detail string) {
	switch {
	case typ != "" && !strings.Contains(strings.ToLower(d.Name), strings.ToLower(typ)):
		return "type", fmt.Sprintf("GPU %d (%s) is %q, allocated %s", d.Index, d.UUID, d.Name, typ)
	case d.UncorrectableECC > 0:
		return "ecc", fmt.Sprintf("GPU %d (%s) has %d uncorrectable ECC errors", d.Index, d.UUID, d.UncorrectableECC)
	case d.RetiredPagesPending:
		return "retired-pages", fmt.Sprintf("GPU %d (%s) has a page retirement pending", d.Index, d.UUID)
	}
	return "", ""
}

func orAny(t string) string {
	if t == "" {
		return "GPUs"
	}
	return t
}
