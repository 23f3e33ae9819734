package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// billionLaughs is the classic entity-expansion bomb in YAML: nine levels
// of nine aliases, 9^9 (387 million) strings when expanded, in 700 bytes.
func billionLaughs(prefix string) string {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	for c := 'b'; c <= 'i'; c++ {
		p := string(c - 1)
		fmt.Fprintf(&b, "%c: &%c [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", c, c, p, p, p, p, p, p, p, p, p)
	}
	return b.String()
}

// Hostile bodies on every endpoint that decodes YAML: each is refused with
// a 400 that says what is wrong, changes nothing, and costs the server a
// bounded amount of memory. The test is not parallel so that the memory
// counters see this test's requests only (parallel tests wait until the
// sequential ones have run).
func TestHostileBodiesBoundedMemory(t *testing.T) {
	const mib = 1 << 20
	deepFlow := func(prefix string, depth int) string {
		return prefix + "x: " + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "\n"
	}
	deepMap := func(prefix string, depth int) string {
		return prefix + "x: " + strings.Repeat("{a: ", depth) + "1" + strings.Repeat("}", depth) + "\n"
	}
	// deepBlock nests block mappings by indentation: the text grows with
	// the square of the depth, so 1,400 levels fit in a spec.
	deepBlock := func(prefix string, depth int) string {
		var b strings.Builder
		b.WriteString(prefix + "x:\n")
		for i := 1; i <= depth; i++ {
			b.WriteString(strings.Repeat(" ", i) + "a:\n")
		}
		return b.String()
	}
	endpoints := []struct{ as, method, path, prefix, what string }{
		{"u1", "POST", "/v1/jobs", "kind: command\ncommand: [true]\nname: a\n", "job spec"},
		{"admin", "PUT", "/v1/quotas/user:u1", "scope: user:u1\n", "quota spec"},
		{"admin", "PUT", "/v1/pools/vision", "name: vision\nproject: vision\n", "pool spec"},
		{"admin", "PUT", "/v1/nodes/n9", "name: n9\ncpu: 4\nmemory: 1Gi\n", "node spec"},
		{"admin", "PUT", "/v1/clusters/remote", "name: remote\n", "cluster spec"},
	}
	type bomb struct {
		name, body, msg string
		maxAlloc        uint64 // bytes the server may allocate for the request
	}
	var peak uint64
	for _, ep := range endpoints {
		bombs := []bomb{
			{"billion laughs", billionLaughs(ep.prefix), "excessive aliasing", 4 * mib},
			{"deep flow sequences", deepFlow(ep.prefix, 200_000), "exceeded max depth of 10000", 16 * mib},
			{"deep flow mappings", deepMap(ep.prefix, 100_000), "exceeded max depth of 10000", 16 * mib},
			{"deep block mappings", deepBlock(ep.prefix, 1_400), "x is not a known field", 16 * mib},
			{"oversized", ep.prefix + "#" + strings.Repeat("x", structs.MaxSpecBytes) + "\n", "at most 1048576 bytes", 8 * mib},
		}
		if ep.path == "/v1/clusters/remote" {
			// Cluster specs are checked for depth before they are
			// re-encoded for the spec decoder (each level adds indentation).
			bombs[3].msg = "cluster spec nests deeper than 8 levels"
		}
		for _, b := range bombs {
			t.Run(ep.path+"/"+b.name, func(t *testing.T) {
				e := apitest.NewEnv(t, "")
				submit(t, e, "u1", "web-1", webSpec)
				before := e.Store.StateJSON(t)
				alloc := allocatedBy(t, func() {
					status, body := do(t, e, e.Tokens[structs.UserID(ep.as)], ep.method, ep.path, b.body)
					assert.Equal(t, http.StatusBadRequest, status, "%.200s", body)
					assert.Contains(t, errMsg(t, body), b.msg)
				})
				peak = max(peak, alloc)
				t.Logf("%s: %d KiB allocated", b.name, alloc>>10)
				assert.LessOrEqual(t, alloc, b.maxAlloc, "bytes allocated while handling %d bytes", len(b.body))
				assert.Equal(t, before, e.Store.StateJSON(t), "nothing is stored")
			})
		}
	}
	t.Logf("most allocated by one hostile request: %d KiB", peak>>10)
}

// A body far over the limit, streamed without a Content-Length, is cut
// off at the limit: the server neither buffers nor reads the rest.
func TestStreamedHugeBodyIsCutOff(t *testing.T) {
	e := apitest.NewEnv(t, "")
	before := e.Store.StateJSON(t)
	const size = 256 << 20
	var sent countingReader
	sent.r = io.LimitReader(zeros{}, size)
	var status int
	var msg string
	alloc := allocatedBy(t, func() {
		req, err := http.NewRequestWithContext(context.Background(), "POST", e.URL()+"/v1/jobs", io.MultiReader(strings.NewReader("kind: command\ncommand: [true]\nname: a\n#"), &sent))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.Tokens["u1"])
		req.ContentLength = -1 // unknown: sent chunked
		resp, err := e.Server.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		status = resp.StatusCode
		var we wire.Error
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&we))
		msg = we.Error
	})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, msg, "at most 1048576 bytes")
	assert.Less(t, sent.n.Load(), int64(size), "the server stops reading long before the end")
	t.Logf("sent %d KiB of %d MiB; %d KiB allocated", sent.n.Load()>>10, size>>20, alloc>>10)
	assert.LessOrEqual(t, alloc, uint64(24<<20), "bytes allocated while refusing a %d MiB body", size>>20)
	assert.Equal(t, before, e.Store.StateJSON(t), "nothing is stored")
}

// Deeply nested JSON on the JSON endpoints (bodies of at most 64 KiB) is
// refused by the decoder's depth limit.
func TestDeepJSONRefused(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000)
	for _, c := range []struct{ as, path, body string }{
		{"u1", "/v1/jobs/web-1/scale", `{"replicas": ` + deep + `}`},
		{"admin", "/v1/nodes/g1/release", `{"accelerators": ` + deep + `}`},
		{"alloc", "/v1/tasks/web-1-0-a0/heartbeat", `{"message": ` + deep + `}`},
	} {
		e, tasks := matrixEnv(t)
		tok := e.Tokens[structs.UserID(c.as)]
		if c.as == "alloc" {
			tok = e.Store.Tokens()[tasks[0].ID]
		}
		before := e.Store.StateJSON(t)
		status, body := do(t, e, tok, "POST", c.path, c.body)
		assert.Equal(t, http.StatusBadRequest, status, c.path)
		assert.Contains(t, errMsg(t, body), "exceeded max depth", c.path)
		assert.Equal(t, before, e.Store.StateJSON(t), "nothing is stored")
	}
}

// allocatedBy returns the bytes the whole process allocated while fn ran
// (runtime.MemStats.TotalAlloc), which bounds what the server held at
// any moment for fn's requests.
func allocatedBy(t *testing.T, fn func()) uint64 {
	t.Helper()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	fn()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// countingReader counts what the client's transport has read (in its own
// goroutine, which may go on after the response).
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
