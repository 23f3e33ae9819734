//go:build !linux

package local

import "errors"

// waitExited is not implemented here: the reaper then reaps the leader
// before killing its group, leaving a small window in which the group ID
// could be reused.
func waitExited(int) error { return errors.New("waitid with WNOWAIT not implemented") }
