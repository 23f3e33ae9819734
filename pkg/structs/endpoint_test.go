package structs_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/atom-sched/atom/pkg/structs"
)

func TestCheckEndpoint(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 60) + ":7070"
	for _, ok := range []string{
		"10.0.3.7:7070", "127.0.0.1:1", "[fd00::1]:65535", "[::1]:80",
		"worker-0.mpi-7.svc.cluster.local:7070", "Host-A:22", "localhost:8080",
	} {
		assert.NoError(t, structs.CheckEndpoint(ok), ok)
	}
	for _, bad := range []string{
		"", "10.0.3.7", "10.0.3.7:", ":7070", "10.0.3.7:0", "10.0.3.7:65536", "10.0.3.7:+80", "10.0.3.7:http",
		"fd00::1:80", "[1.2.3.4]:80", "[fe80::1%eth0]:80", "1.2.3.999:80", "-a.b:1", "a-.b:1", "a..b:1",
		"a_b:1", "a b:1", "é.example:1", "0.0.0.0:7070", "[::]:7070", long, "http://h:1",
	} {
		err := structs.CheckEndpoint(bad)
		if assert.Error(t, err, bad) {
			assert.True(t, strings.HasPrefix(err.Error(), "endpoint "), err.Error())
			assert.Contains(t, err.Error(), "is not allowed", bad)
		}
	}
	assert.Contains(t, structs.CheckEndpoint("0.0.0.0:7070").Error(), "not the unspecified address")
	assert.Contains(t, structs.CheckEndpoint(long).Error(), "bytes is not allowed")
}
