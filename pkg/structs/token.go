package structs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// LaunchToken is the token atom gives its job (as ATOM_TOKEN) in place of
// the task's allocation token: the coordinator accepts it only to list the
// job's peers and to authenticate launches between them (atom rsh), never
// for heartbeats. So a job cannot report for its own task — claim a
// failed GPU preflight to quarantine GPUs, or end itself as Succeeded —
// and a leaked launch token gives no more than the launch it was made for.
// It is HMAC-SHA256 keyed by the allocation token, in hex.
func LaunchToken(allocation string) string {
	if allocation == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(allocation))
	m.Write([]byte("atom launch token v1"))
	return hex.EncodeToString(m.Sum(nil))
}
