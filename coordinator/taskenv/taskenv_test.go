package taskenv

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/pkg/structs"
)

// An edge task gets its devices as TYPE:INDEX in ATOM_DEVICES; others
// get no such variable.
func TestDevicesEnv(t *testing.T) {
	j := &structs.Job{ID: "j", Replicas: 1}
	tk := &structs.Task{ID: "j-0-a0", Devices: map[string][]int{"jetson-xavier": {0, 1}, "coral": {3}}}
	assert.Equal(t, "coral:3,jetson-xavier:0,jetson-xavier:1", Env(tk, j, "", "")["ATOM_DEVICES"])
	_, ok := Env(&structs.Task{ID: "j-0-a0"}, j, "", "")["ATOM_DEVICES"]
	assert.False(t, ok)
}
