package gpu_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/gpu"
)

// fakeLister is the hardware boundary's test double.
type fakeLister struct {
	devs []gpu.Device
	err  error
}

func (f fakeLister) Devices() ([]gpu.Device, error) { return f.devs, f.err }

func a100(i int) gpu.Device {
	return gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "NVIDIA A100-SXM4-80GB"}
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	noNVML := fakeLister{err: fmt.Errorf("%w: library not found", gpu.ErrNotAvailable)}
	cases := map[string]struct {
		lister    gpu.Lister
		want      gpu.Want
		available bool
		check     string // the failed check; "" passes
		msg       string
		bad       []int // the allocated indices reported failed
	}{
		"cpu task without nvml":      {lister: noNVML},
		"gpu task without nvml":      {lister: noNVML, want: gpu.Want{Accelerators: []int{0}, Type: "A100"}, check: "nvml", msg: "accelerators allocated but NVML is not available"},
		"match":                      {lister: fakeLister{devs: []gpu.Device{a100(0), a100(1)}}, want: gpu.Want{Accelerators: []int{2, 3}, Type: "a100"}, available: true},
		"any type":                   {lister: fakeLister{devs: []gpu.Device{a100(0)}}, want: gpu.Want{Accelerators: []int{0}}, available: true},
		"cpu task on a gpu host":     {lister: fakeLister{devs: []gpu.Device{}}, available: true},
		"too many visible":           {lister: fakeLister{devs: []gpu.Device{a100(0), a100(1)}}, want: gpu.Want{Accelerators: []int{0}}, available: true, check: "count", msg: "2 GPUs visible, 1 allocated"},
		"too few visible":            {lister: fakeLister{devs: []gpu.Device{a100(0)}}, want: gpu.Want{Accelerators: []int{0, 1}}, available: true, check: "count"},
		"wrong model":                {lister: fakeLister{devs: []gpu.Device{a100(0)}}, want: gpu.Want{Accelerators: []int{0}, Type: "H100"}, available: true, check: "type", msg: `is "NVIDIA A100-SXM4-80GB", allocated H100`, bad: []int{0}},
		"ecc errors":                 {lister: fakeLister{devs: []gpu.Device{a100(0), {Index: 1, UUID: "GPU-1", Name: "NVIDIA A100", UncorrectableECC: 2}}}, want: gpu.Want{Accelerators: []int{4, 6}}, available: true, check: "ecc", msg: "GPU 1 (GPU-1) has 2 uncorrectable ECC errors", bad: []int{6}},
		"retirement pending":         {lister: fakeLister{devs: []gpu.Device{{Index: 0, UUID: "GPU-0", Name: "A100", RetiredPagesPending: true}}}, want: gpu.Want{Accelerators: []int{0}}, available: true, check: "retired-pages", bad: []int{0}},
		"two bad GPUs":               {lister: fakeLister{devs: []gpu.Device{{Index: 0, UUID: "GPU-0", Name: "A100", UncorrectableECC: 1}, a100(1), {Index: 2, UUID: "GPU-2", Name: "A100", RetiredPagesPending: true}}}, want: gpu.Want{Accelerators: []int{1, 2, 3}}, available: true, check: "ecc", msg: "GPU 0 (GPU-0) has 1 uncorrectable ECC errors; GPU 2 (GPU-2) has a page retirement pending", bad: []int{1, 3}},
		"nvml fails for other cause": {lister: fakeLister{err: errors.New("nvml init: insufficient permissions")}, check: "list", msg: "insufficient permissions"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := gpu.Preflight(tc.lister, tc.want)
			assert.Equal(t, tc.available, res.Available)
			if tc.check == "" {
				require.NoError(t, err)
				assert.Len(t, res.UUIDs(), len(res.Devices))
				return
			}
			var ce *gpu.CheckError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.check, ce.Check)
			assert.Contains(t, err.Error(), "gpu preflight failed: "+tc.check+": ")
			assert.Contains(t, err.Error(), tc.msg)
			assert.Equal(t, tc.bad, ce.Accelerators, "allocated indices of the failed GPUs")
		})
	}
}

// TestNVMLNotAvailableHere: the CI machines have no NVIDIA driver, so the
// real lister says so instead of failing otherwise. On a GPU machine
// (make gpu-check) it lists devices instead.
func TestNVMLNotAvailableHere(t *testing.T) {
	devs, err := gpu.NVML{}.Devices()
	if err == nil {
		t.Skipf("NVML is available here (%d GPUs): make gpu-check covers this machine", len(devs))
	}
	assert.ErrorIs(t, err, gpu.ErrNotAvailable)
}

// A simulated node's accelerators pass the preflight unless a fault is
// injected; the fault is found by the real checks.
func TestSimulatedAccelerators(t *testing.T) {
	faults, err := gpu.ParseFaults("2:ecc, 3:retired-pages")
	require.NoError(t, err)
	sim := gpu.Simulated{Node: "a100-1", Model: "A100", Want: []int{0, 1}, Faults: faults}
	res, err := gpu.Preflight(sim, gpu.Want{Accelerators: []int{0, 1}, Type: "A100"})
	require.NoError(t, err)
	assert.Equal(t, []string{"GPU-sim-a100-1-0", "GPU-sim-a100-1-1"}, res.UUIDs())

	sim.Want = []int{1, 2}
	_, err = gpu.Preflight(sim, gpu.Want{Accelerators: []int{1, 2}, Type: "A100"})
	assert.EqualError(t, err, "gpu preflight failed: ecc: GPU 2 (GPU-sim-a100-1-2) has 1 uncorrectable ECC errors")
	sim.Want = []int{3}
	_, err = gpu.Preflight(sim, gpu.Want{Accelerators: []int{3}, Type: "A100"})
	assert.EqualError(t, err, "gpu preflight failed: retired-pages: GPU 3 (GPU-sim-a100-1-3) has a page retirement pending")

	_, err = gpu.ParseFaults("2:melted")
	assert.EqualError(t, err, `simulated GPU fault "2:melted": use INDEX:ecc or INDEX:retired-pages, comma-separated`)
}

// On a host that shows all its GPUs, only the allocated ones must exist
// and are checked.
func TestHostGPUs(t *testing.T) {
	host := fakeLister{devs: []gpu.Device{
		{Index: 0, UUID: "GPU-a", Name: "NVIDIA H200"},
		{Index: 1, UUID: "GPU-b", Name: "NVIDIA H200", UncorrectableECC: 2},
		{Index: 2, UUID: "GPU-c", Name: "NVIDIA H200"},
	}}
	res, err := gpu.Preflight(host, gpu.Want{Accelerators: []int{2, 0}, Type: "H200", HostGPUs: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"GPU-c", "GPU-a"}, res.UUIDs())
	_, err = gpu.Preflight(host, gpu.Want{Accelerators: []int{1}, Type: "H200", HostGPUs: true})
	assert.EqualError(t, err, "gpu preflight failed: ecc: GPU 1 (GPU-b) has 2 uncorrectable ECC errors")
	_, err = gpu.Preflight(host, gpu.Want{Accelerators: []int{3}, HostGPUs: true})
	assert.EqualError(t, err, "gpu preflight failed: count: GPU 3 allocated but the host has 3 GPUs")
	_, err = gpu.Preflight(host, gpu.Want{Accelerators: []int{0}})
	assert.EqualError(t, err, "gpu preflight failed: count: 3 GPUs visible, 1 allocated", "a container must see only its own")
}
