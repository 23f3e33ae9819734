package main_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache/cachetest"
	"github.com/atom-sched/atom/pkg/structs"
)

// atom cache refuses the dataset names a job's cache.datasets refuses,
// and "/" or "" as the dataset of put and rm, with exit 2 and changing
// nothing; rm --all is the one way to empty the whole cache.
func TestCacheNamesRefused(t *testing.T) {
	t.Parallel()
	srv := cachetest.StartRedis(t)
	local := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(local, "f.txt"), []byte("hi"), 0o644))
	env := []string{"ATOM_CACHE_REDIS=" + srv.Addr}
	cache := func(args ...string) (int, string) {
		t.Helper()
		return exitCode(t, atomCmd(t, env, append([]string{"cache"}, args...)...))
	}
	code, out := cache("put", local, "keep/it")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "dataset keep/it is complete in redis "+srv.Addr)

	for _, c := range []struct {
		args []string
		want string // quoted name, then what to do
	}{
		{[]string{"put", local, "/"}, `"/" is not a dataset name`},
		{[]string{"put", local, ""}, `"" is not a dataset name`},
		{[]string{"put", local, "../etc"}, `"../etc" is not a dataset name`},
		{[]string{"put", local, "./x/../y"}, `"./x/../y" is not a dataset name`},
		{[]string{"put", local, "a b"}, `"a b" is not a dataset name`},
		{[]string{"put", local, "a\nb"}, `"a\nb" is not a dataset name`},
		{[]string{"put", local, "keep/"}, `"keep/" is not a dataset name`},
		{[]string{"put", local, "/keep"}, `"/keep" is not a dataset name`},
		{[]string{"rm", "-r", "/"}, `"/" is not a dataset name`},
		{[]string{"rm", "-r", ""}, `"" is not a dataset name`},
		{[]string{"rm", "-r", "keep//it"}, `"keep//it" is not a dataset name`},
		{[]string{"rm", "--all", "keep"}, "use atom cache rm [-r] DATASET|PATH, or atom cache rm --all"},
		{[]string{"get", "../keep", t.TempDir()}, `"../keep" is not a dataset name`},
		{[]string{"ls", "keep/../keep"}, `"keep/../keep" is not a dataset name`},
		{[]string{"du", "keep it"}, `"keep it" is not a dataset name`},
	} {
		code, out := cache(c.args...)
		assert.Equal(t, 2, code, "%q: %s", c.args, out)
		assert.Contains(t, out, "atom cache "+c.args[0]+": "+c.want, "%q", c.args)
		if c.args[0] != "rm" || c.args[1] != "--all" {
			assert.Contains(t, out, structs.DatasetRule, "%q", c.args)
		}
	}
	// Nothing changed: the one dataset, complete; the root is no dataset.
	code, out = cache("ls", "/")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `^d\S+\s+\d+\s+\S+ \S+\s+keep/\s*\n$`, out)
	code, out = cache("du")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "/\t1 files\t3 dirs\t2 bytes\tcomplete=false\n", out)
	code, out = cache("du", "keep/it")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "complete=true")

	code, out = cache("rm", "--all")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "removed everything in the cache in redis "+srv.Addr+"\n", out)
	code, out = cache("ls")
	require.Equal(t, 0, code, out)
	assert.Empty(t, out)
}

// A Redis that is down is named once, with what atom was doing, why,
// and where its address came from.
func TestCacheRedisDownSaysWhy(t *testing.T) {
	t.Parallel()
	srv := cachetest.StartRedis(t)
	srv.Stop()
	host, port, err := net.SplitHostPort(srv.Addr)
	require.NoError(t, err)
	for _, c := range []struct {
		from string
		env  []string
		args []string
	}{
		{"ATOM_CACHE_REDIS", []string{"ATOM_CACHE_REDIS=" + srv.Addr}, nil},
		{"REDIS_HOST and REDIS_PORT", []string{"REDIS_HOST=" + host, "REDIS_PORT=" + port}, nil},
		{"--redis", []string{"ATOM_CACHE_REDIS=127.0.0.1:6379"}, []string{"--redis", srv.Addr}},
	} {
		code, out := exitCode(t, atomCmd(t, c.env, append([]string{"cache", "ls", "--timeout", "500ms"}, c.args...)...))
		assert.Equal(t, 1, code)
		assert.Equal(t, "atom cache: redis "+srv.Addr+" not reachable for 500ms while checking the cache's layout: connection refused (address from "+c.from+")\n", out)
	}
}
