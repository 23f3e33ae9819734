//go:build !linux

package cli

import "errors"

// mountsUnder cannot list mounts here: it finds none.
func mountsUnder(string) []string { return nil }

func unmount(string) error { return errors.New("unmount: not supported on this system") }
