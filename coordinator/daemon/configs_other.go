//go:build !linux

package daemon

// mountReadOnly mounts nothing: the files' modes keep configs read-only.
func mountReadOnly(string) {}

func unmountConfigs(string) {}
