// Package structs holds atom's shared domain types: clusters, nodes, pools,
// quotas, jobs and tasks, split by domain. Quantities inside these
// types are plain integers in fixed units: CPU in millicores, memory in bytes,
// accelerators and edge devices in whole units, durations in time.Duration.
// User-facing specs (spec.go) carry Kubernetes quantity strings ("500m",
// "944Gi") and are converted and validated into these types.
package structs
