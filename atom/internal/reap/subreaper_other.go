//go:build !linux

package reap

import (
	"errors"
	"time"
)

// BecomeSubreaper is only supported on Linux.
func BecomeSubreaper() error { return errors.New("child subreaper is only supported on Linux") }

// KillDescendants is a no-op off Linux.
func KillDescendants(time.Duration) int { return 0 }
