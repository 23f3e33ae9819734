package kube

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestLogsErrorForbidden: a Pod log endpoint that refuses the coordinator
// says what to apply, and is no missing log to wait for.
func TestLogsErrorForbidden(t *testing.T) {
	b := &Backend{cfg: Config{Namespace: "atom-jobs"}}
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/log"}, "j-1-0",
		errors.New(`User "system:serviceaccount:atom:atom-coordinator" cannot get resource "pods/log" in API group "" in the namespace "atom-jobs"`))
	err := b.logsError("j/1/0", "j-1-0", refused)
	assert.EqualError(t, err, `read the log of Pod atom-jobs/j-1-0 through the API server: pods/log "j-1-0" is forbidden: `+
		`User "system:serviceaccount:atom:atom-coordinator" cannot get resource "pods/log" in API group "" in the namespace "atom-jobs": `+
		`the coordinator's identity may not get pods/log: apply deploy/rbac.yaml (ClusterRole atom-coordinator, which grants it) `+
		`and bind it to the user of the cluster's kubeconfig, or to its service account in the cluster`)
	assert.False(t, errors.Is(err, fs.ErrNotExist), "nothing to wait for")
}

// TestLogsErrorNotStartedYet: a container the kubelet has no status for
// yet, or one waiting to start, is a log to wait for, not an error.
func TestLogsErrorNotStartedYet(t *testing.T) {
	b := &Backend{cfg: Config{Namespace: "atom-jobs"}}
	for _, msg := range []string{
		`container "task" in pod "slow-1-0" is not available`,
		`container "task" in pod "slow-1-0" is waiting to start: ContainerCreating`,
	} {
		err := b.logsError("slow/1/0", "slow-1-0", apierrors.NewBadRequest(msg))
		assert.EqualError(t, err, "its Pod atom-jobs/slow-1-0 has not started its container yet ("+msg+"): file does not exist")
		assert.True(t, errors.Is(err, fs.ErrNotExist), "the caller waits: %v", err)
	}
}
