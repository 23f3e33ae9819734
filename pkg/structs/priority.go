package structs

import (
	"encoding/json"
	"fmt"
)

// Priority is a job's priority class. Higher values win. The zero value is
// PriorityNormal so an unset priority means the default.
type Priority int8

const (
	PriorityLow    Priority = -1 // idle resources anywhere lending; no quota; preemptible
	PriorityNormal Priority = 0  // project pool first, then public under quota; preempts low
	PriorityHigh   Priority = 1  // its project's pool only; no quota
)

// String returns "low", "normal" or "high".
func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityNormal:
		return "normal"
	case PriorityHigh:
		return "high"
	}
	return fmt.Sprintf("priority(%d)", int8(p))
}

// ParsePriority parses "low", "normal" (or "") and "high".
func ParsePriority(s string) (Priority, error) {
	switch s {
	case "low":
		return PriorityLow, nil
	case "", "normal":
		return PriorityNormal, nil
	case "high":
		return PriorityHigh, nil
	}
	return 0, fmt.Errorf("priority %q is not allowed: use high, normal or low", s)
}

// MarshalJSON writes the priority's name.
func (p Priority) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON reads a priority name.
func (p *Priority) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("priority must be a string (high, normal or low): %w", err)
	}
	v, err := ParsePriority(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}
