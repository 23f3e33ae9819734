//go:build !linux

package server

// lockHolder cannot tell who holds a lock here: 0.
func lockHolder(string) int { return 0 }
