package structs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration that JSON (and YAML) carry as a spec
// writes it: Go's duration text, without its zero units ("30m", "1h30m",
// "90s" is "1m30s"). A bare number is read as nanoseconds, which is how
// coordinators before it wrote durations (Raft logs and snapshots).
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String is d as JSON carries it.
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") || strings.HasSuffix(s, "h0m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// MarshalJSON writes d as a string such as "30m".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string ("30m", "1h30m") or a number of
// nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(b, []byte(`"`)) {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: use Go's form such as 90s, 30m or 1h30m", s)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration %s: use a string such as \"30m\"", b)
	}
	*d = Duration(n)
	return nil
}
