// Package keyringtest finds secret values where they must not be: in
// Raft log entries, snapshots, server logs and API listings.
package keyringtest

import (
	"bytes"
	"encoding/base64"
)

// Leaks reports whether b holds value in plain, or base64-encoded at any
// alignment (as JSON writes []byte, alone or inside a longer byte
// string). value should be at least 12 bytes, so that its base64 core
// (whole 3-byte groups of value alone) is long enough to be telling.
func Leaks(b []byte, value string) bool {
	if bytes.Contains(b, []byte(value)) {
		return true
	}
	for pad := range 3 {
		buf := append(make([]byte, pad), value...)
		enc := base64.StdEncoding.EncodeToString(buf)
		first := (pad + 2) / 3         // the first group of value's bytes alone
		last := (pad + len(value)) / 3 // groups wholly inside buf's value part end before this
		if last-first < 2 {
			continue
		}
		core := enc[first*4 : last*4]
		if bytes.Contains(b, []byte(core)) || bytes.Contains(b, []byte(base64.URLEncoding.EncodeToString(buf)[first*4:last*4])) {
			return true
		}
	}
	return false
}
