package wire

// ReleaseRequest is the body of POST /v1/nodes/{name}/release: the
// accelerator indices to return to service after a quarantine; none
// (send {}) returns every quarantined one.
type ReleaseRequest struct {
	Accelerators []int `json:"accelerators,omitempty"`
}

// ReleaseResponse says what a release returned to service.
type ReleaseResponse struct {
	Released    []int      `json:"released"`
	Quarantined []int      `json:"quarantined"` // still quarantined
	Node        NodeStatus `json:"node"`
}
