package gpu

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML lists GPUs through the NVIDIA driver's libnvml, loaded at run time:
// a binary built with it runs on machines without the driver, where
// Devices returns ErrNotAvailable.
type NVML struct{}

// Devices initialises NVML, lists every visible device and shuts NVML down.
func (NVML) Devices() ([]Device, error) {
	switch ret := nvml.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("%w: %s", ErrNotAvailable, ret.Error())
	default:
		return nil, fmt.Errorf("nvml init: %w", ret)
	}
	defer nvml.Shutdown()
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device count: %w", ret)
	}
	out := make([]Device, 0, n)
	for i := range n {
		d, err := device(i)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// device reads device i; counters a GPU does not support read as healthy.
func device(i int) (Device, error) {
	h, ret := nvml.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("nvml device %d: %w", i, ret)
	}
	d := Device{Index: i}
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("nvml device %d uuid: %w", i, ret)
	}
	if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("nvml device %d name: %w", i, ret)
	}
	ecc, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	if err := supported(ret); err != nil {
		return Device{}, fmt.Errorf("nvml device %d ecc errors: %w", i, err)
	}
	d.UncorrectableECC = ecc
	pending, ret := h.GetRetiredPagesPendingStatus()
	if err := supported(ret); err != nil {
		return Device{}, fmt.Errorf("nvml device %d retired pages: %w", i, err)
	}
	d.RetiredPagesPending = ret == nvml.SUCCESS && pending == nvml.FEATURE_ENABLED
	return d, nil
}

// supported is nil for success and for a counter the device lacks.
func supported(ret nvml.Return) error {
	if ret == nvml.SUCCESS || ret == nvml.ERROR_NOT_SUPPORTED {
		return nil
	}
	return errors.New(ret.Error())
}
