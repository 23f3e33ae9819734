package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
)

// Bad input on every write endpoint gets a 4xx with a message saying what
// is allowed, and changes nothing.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 64)
	huge := "kind: command\ncommand: [true]\nname: big\n#" + strings.Repeat("x", structs.MaxSpecBytes) + "\n"
	const task0 = "/v1/tasks/web-1-0-a0/heartbeat"
	tooLongNode := strings.Repeat("n.", 126) + "nn" // node names are DNS subdomains: at most 253
	type tc struct {
		as                 string // "u1", "admin" or "alloc"
		method, path, body string
		status             int
		msg                string // a part of the message
		hdr                []string
	}
	cases := map[string]tc{
		// POST /v1/jobs
		"submit: empty body":     {"u1", "POST", "/v1/jobs", "", 400, "request body is empty: send a job spec in YAML or JSON", nil},
		"submit: blank body":     {"u1", "POST", "/v1/jobs", "  \n\t", 400, "request body is empty", nil},
		"submit: only a comment": {"u1", "POST", "/v1/jobs", "# nothing\n", 400, "request body is empty: send a job spec in YAML or JSON", nil},
		"submit: bad UTF-8":      {"u1", "POST", "/v1/jobs", "kind: command\ncommand: [true]\nname: a\xffb\n", 400, "not valid UTF-8", nil},
		"submit: oversized":      {"u1", "POST", "/v1/jobs", huge, 400, "at most 1048576 bytes", nil},
		"submit: unknown kind": {"u1", "POST", "/v1/jobs", `{kind: batch, name: a, command: [true], resources: {cpu: "1"}}`, 400,
			`kind "batch" is not allowed: use mpi, spark, service or command, or a plugin's kind (this coordinator has none: an admin adds them with --plugin-dir or --job-kind)`, nil},
		"submit: no command": {"u1", "POST", "/v1/jobs", `{kind: command, name: a, args: [x], resources: {cpu: "1"}}`, 400,
			"command is required for kind command: give the program and its arguments, e.g. command: [python, train.py] (args only adds to it)", nil},
		"submit: unknown field":     {"u1", "POST", "/v1/jobs", "kind: command\ncommand: [true]\nname: a\nreplica: 2\n", 400, "replica is not a known field", nil},
		"submit: JSON unknown":      {"u1", "POST", "/v1/jobs", `{"kind": "command", "name": "a", "bogus": 1}`, 400, "bogus is not a known field", nil},
		"submit: negative cpu":      {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {cpu: "-1"}}`, 400, "resources.cpu", nil},
		"submit: overflowing mem":   {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {memory: 9999999999Ei}}`, 400, "resources.memory", nil},
		"submit: huge replicas":     {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, replicas: 100000, resources: {cpu: "1"}}`, 400, "replicas", nil},
		"submit: 2^64 replicas":     {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, replicas: 18446744073709551617}`, 400, "replicas", nil},
		"submit: fractional gpus":   {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {accelerators: {type: A100, count: 0.5}}}`, 400, "resources.accelerators.count", nil},
		"submit: name too long":     {"u1", "POST", "/v1/jobs", "{kind: command, command: [true], name: " + long + "}", 400, "name", nil},
		"submit: uppercase name":    {"u1", "POST", "/v1/jobs", "{kind: command, command: [true], name: Train}", 400, `name "Train"`, nil},
		"submit: two documents":     {"u1", "POST", "/v1/jobs", "kind: command\ncommand: [true]\nname: a\n---\nkind: command\nname: b\n", 400, "document", nil},
		"submit: not a mapping":     {"u1", "POST", "/v1/jobs", "[1, 2]", 400, "", nil},
		"submit: bad request ID":    {"u1", "POST", "/v1/jobs", lowSpec, 400, "request ID", []string{"Idempotency-Key", "a b"}},
		"submit: long request ID":   {"u1", "POST", "/v1/jobs", lowSpec, 400, "request ID", []string{"Idempotency-Key", strings.Repeat("k", 129)}},
		"submit: two request IDs":   {"u1", "POST", "/v1/jobs?requestID=r2", lowSpec, 400, "differ", []string{"Idempotency-Key", "r1"}},
		"submit: unsatisfiable":     {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {accelerators: {type: A100, count: 9}}}`, 422, "can never fit", nil},
		"submit: over quota":        {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {accelerators: {type: A100, count: 1}}}`, 409, "quota exceeded for user:u1: gpu/A100 quota 8, in use 8, requested 1", nil},
		"submit: unknown GPU type":  {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, priority: low, resources: {accelerators: {type: H800, count: 1}}}`, 422, `unknown accelerator type "H800"`, nil},
		"submit: not a member":      {"u2", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, project: perception, resources: {cpu: "1"}}`, 403, "not a member of project perception", nil},
		"submit: name in use":       {"u1", "POST", "/v1/jobs", `{kind: service, command: [true], name: web, project: perception, resources: {cpu: "1"}}`, 409, "job name web is taken by project perception's active job web-1 (Scheduled)", nil},
		"submit: high without pool": {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, project: vision, priority: high, resources: {cpu: "1"}}`, 403, "project vision does not exist", nil},

		// A job its tasks could not be given: Linux refuses one
		// environment string over 128 KiB at exec (found by a new user:
		// accepted, then "argument list too long", exit 127).
		"submit: command too long for exec": {"u1", "POST", "/v1/jobs", `{kind: command, name: a, priority: low, resources: {cpu: "1"}, command: [sh, -c, "` +
			strings.Repeat("x", 130<<10) + `"]}`, 400, "over the 120 KiB one environment variable may hold", nil},
		"submit: env value too long": {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, priority: low, resources: {cpu: "1"}, env: {BIG: "` +
			strings.Repeat("x", 121<<10) + `"}}`, 400, "env.BIG is 122 KiB, over the 120 KiB one environment variable may hold", nil},

		// Control characters in names and values; quantities at and past
		// the largest int64 (9223372036854775807).
		"submit: name with NUL":     {"u1", "POST", "/v1/jobs", `{"kind": "command", "name": "a\u0000b"}`, 400, "no control characters", nil},
		"submit: name with ESC":     {"u1", "POST", "/v1/jobs", `{"kind": "command", "name": "a\u001b[31m"}`, 400, "no control characters", nil},
		"submit: YAML control char": {"u1", "POST", "/v1/jobs", "kind: command\ncommand: [true]\nname: a\x01b\n", 400, "control characters are not allowed", nil},
		"submit: env key with DEL":  {"u1", "POST", "/v1/jobs", `{"kind": "command", "name": "a", "env": {"A\u007f": "x"}}`, 400, "env key", nil},
		"submit: arg with NUL":      {"u1", "POST", "/v1/jobs", `{"kind": "command", "name": "a", "command": ["a\u0000b"]}`, 400, "command[0]", nil},
		"submit: project with BEL":  {"u1", "POST", "/v1/jobs", `{"kind": "command", "name": "a", "project": "p\u0007"}`, 400, "project", nil},
		"submit: cpu int64 max":     {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {cpu: 9223372036854775807m}}`, 400, "overflows 64 bits", nil},
		"submit: cpu past int64":    {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {cpu: 9223372036854775808m}}`, 400, "overflows 64 bits", nil},
		"submit: memory int64 max":  {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {memory: 9223372036854775807}}`, 400, "overflows 64 bits", nil},
		"submit: memory past int64": {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {memory: 9223372036854775808}}`, 400, "overflows 64 bits", nil},
		"submit: gpus int64 max":    {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {accelerators: {type: A100, count: 9223372036854775807}}}`, 400, "use 1 to 64", nil},
		"submit: gpus past int64":   {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, resources: {accelerators: {type: A100, count: 9223372036854775808}}}`, 400, "fits in 64 bits", nil},
		"submit: replicas max":      {"u1", "POST", "/v1/jobs", `{kind: command, command: [true], name: a, replicas: 9223372036854775807, resources: {cpu: "1"}}`, 400, "use 1 to 10000", nil},
		"scale: int64 max":          {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": 9223372036854775807}`, 400, "use 0 (park the service) to 10000", nil},
		"scale: past int64":         {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": 9223372036854775808}`, 400, "replicas", nil},
		"quota: memory int64 max":   {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limits: {memory: 9223372036854775807}}`, 400, "overflows 64 bits", nil},
		"quota: gpus past int64":    {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limits: {gpu/A100: 9223372036854775808}}`, 400, "overflows 64 bits", nil},
		"node: cpu int64 max":       {"admin", "PUT", "/v1/nodes/n9", `{name: n9, cpu: 9223372036854775807m, memory: 1Gi}`, 400, "overflows 64 bits", nil},
		"node: tag with SOH":        {"admin", "PUT", "/v1/nodes/n9", `{"name": "n9", "cpu": 4, "memory": "1Gi", "tags": {"a\u0001": ""}}`, 400, "no control characters", nil},
		"pool: member with SOH":     {"admin", "PUT", "/v1/pools/vision", `{"name": "vision", "project": "vision", "members": ["u\u0001"]}`, 400, "no control characters", nil},
		"cluster: redis with NUL":   {"admin", "PUT", "/v1/clusters/remote", `{"name": "remote", "redis": "h\u0000:6379"}`, 400, "no control characters", nil},
		"release: past int64":       {"admin", "POST", "/v1/nodes/g1/release", `{"accelerators": [9223372036854775808]}`, 400, "accelerators", nil},
		"heartbeat: exit past int":  {"alloc", "POST", task0, `{"state": "Failed", "exitCode": 9223372036854775808}`, 400, "exitCode", nil},
		"path: name with NUL":       {"admin", "PUT", "/v1/pools/vi%00sion", `{name: vision, project: vision}`, 400, "pool name", nil},
		"path: bad UTF-8":           {"admin", "PUT", "/v1/clusters/re%ffmote", `{name: remote}`, 400, "cluster name", nil},

		// POST /v1/jobs/{id}/scale
		"scale: negative":       {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": -1}`, 400, "replicas -1 is not allowed: use 0 (park the service) to 10000", nil},
		"scale: no replicas":    {"u1", "POST", "/v1/jobs/web-1/scale", `{}`, 400, `replicas is missing: send {"replicas": N}, N from 0 (park the service) to 10000`, nil},
		"scale: null replicas":  {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": null}`, 400, "replicas is missing", nil},
		"scale: too many":       {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": 10001}`, 400, "use 0 (park the service) to 10000", nil},
		"scale: overflow":       {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": 99999999999999999999}`, 400, "replicas", nil},
		"scale: float":          {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": 1.5}`, 400, "replicas", nil},
		"scale: string":         {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": "2"}`, 400, "replicas", nil},
		"scale: unknown field":  {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": 2, "force": true}`, 400, `unknown field "force"`, nil},
		"scale: two objects":    {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": 2}{"replicas": 3}`, 400, "one object", nil},
		"scale: not an object":  {"u1", "POST", "/v1/jobs/web-1/scale", `[3]`, 400, "not a JSON object", nil},
		"scale: empty":          {"u1", "POST", "/v1/jobs/web-1/scale", ``, 400, "request body is empty", nil},
		"scale: bad UTF-8":      {"u1", "POST", "/v1/jobs/web-1/scale", "{\"replicas\": 2, \"x\": \"\xc3\"}", 400, "not valid UTF-8", nil},
		"scale: oversized":      {"u1", "POST", "/v1/jobs/web-1/scale", `{"replicas": 2` + strings.Repeat(" ", 70000) + `}`, 400, "at most 65536 bytes", nil},
		"scale: not a service":  {"u1", "POST", "/v1/jobs/low-1/scale", `{"replicas": 2}`, 400, "only services scale", nil},
		"scale: batch to 0":     {"u1", "POST", "/v1/jobs/low-1/scale", `{"replicas": 0}`, 400, "job low-1 is a command job: only services scale (cancel it to stop it)", nil},
		"scale: over quota":     {"u1", "POST", "/v1/jobs/pub-1/scale", `{"replicas": 9}`, 409, "quota exceeded for user:u1", nil},
		"scale: unknown job":    {"u1", "POST", "/v1/jobs/nope-1/scale", `{"replicas": 2}`, 404, "job nope-1 not found", nil},
		"cancel: unknown job":   {"u1", "POST", "/v1/jobs/nope-1/cancel", ``, 404, "not found", nil},
		"cancel: already ended": {"u1", "POST", "/v1/jobs/done-1/cancel", ``, 409, "already ended", nil},

		// PUT /v1/quotas/{scope}
		"quota: negative":       {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limits: {cpu: "-1"}}`, 400, `limits["cpu"]`, nil},
		"quota: overflow":       {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limits: {memory: 99999999Ei}}`, 400, `limits["memory"]`, nil},
		"quota: fractional gpu": {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limits: {gpu/A100: 1.5}}`, 400, `limits["gpu/A100"]`, nil},
		"quota: unknown key":    {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limits: {disk: 1}}`, 400, "use cpu, memory, gpu", nil},
		"quota: unknown field":  {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limit: {cpu: 1}}`, 400, "limit is not a known field", nil},
		"quota: JSON unknown":   {"admin", "PUT", "/v1/quotas/user:u1", `{"scope": "user:u1", "limits": {}, "x": 1}`, 400, "x is not a known field", nil},
		"quota: type in lower case": {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u1", limits: {gpu/a100: 16}}`, 400,
			`quota user:u1: limits[gpu/a100]: unknown accelerator type "a100": this cluster has A100; did you mean gpu/A100? (types are case-sensitive)`, nil},
		"quota: scope mismatch":  {"admin", "PUT", "/v1/quotas/user:u1", `{scope: "user:u2", limits: {cpu: 1}}`, 400, "does not match", nil},
		"quota: bad scope":       {"admin", "PUT", "/v1/quotas/team:x", `{scope: "team:x", limits: {cpu: 1}}`, 400, "use user:<name> or project:<name>", nil},
		"quota: uppercase proj":  {"admin", "PUT", "/v1/quotas/project:Vision", `{scope: "project:Vision"}`, 400, "project", nil},
		"quota: long project":    {"admin", "PUT", "/v1/quotas/project:" + long, `{scope: "project:` + long + `"}`, 400, "project", nil},
		"quota: empty":           {"admin", "PUT", "/v1/quotas/user:u1", ``, 400, "request body is empty: send a quota spec", nil},
		"quota: bad UTF-8":       {"admin", "PUT", "/v1/quotas/user:u1", "scope: \"user:u1\"\nlimits: {cpu: \"\xfe\"}", 400, "not valid UTF-8", nil},
		"quota: oversized":       {"admin", "PUT", "/v1/quotas/user:u1", huge, 400, "at most", nil},
		"quota: read bad scope":  {"u1", "GET", "/v1/quotas/nobody", ``, 400, "scope", nil},
		"pool: uppercase":        {"admin", "PUT", "/v1/pools/Vision", `{name: Vision, project: vision}`, 400, `pool name "Vision"`, nil},
		"pool: too long":         {"admin", "PUT", "/v1/pools/" + long, `{name: ` + long + `, project: vision}`, 400, "pool name", nil},
		"pool: name mismatch":    {"admin", "PUT", "/v1/pools/vision", `{name: vision2, project: vision}`, 400, "does not match", nil},
		"pool: unknown field":    {"admin", "PUT", "/v1/pools/vision", `{name: vision, project: vision, member: [u1]}`, 400, "member is not a known field", nil},
		"pool: JSON unknown":     {"admin", "PUT", "/v1/pools/vision", `{"name": "vision", "project": "vision", "Members": ["u1"]}`, 400, "Members is not a known field", nil},
		"pool: bad member":       {"admin", "PUT", "/v1/pools/vision", `{name: vision, project: vision, members: ["u 1"]}`, 400, "members[0]", nil},
		"pool: public":           {"admin", "PUT", "/v1/pools/public", `{name: public, minRuntime: 25h}`, 400, "use a duration from 0s to 24h", nil},
		"pool: project taken":    {"admin", "PUT", "/v1/pools/vision", `{name: vision, project: perception}`, 409, "already has pool perception", nil},
		"pool: empty":            {"admin", "PUT", "/v1/pools/vision", ``, 400, "request body is empty: send a pool spec", nil},
		"pool: bad UTF-8":        {"admin", "PUT", "/v1/pools/vision", "name: vision\nproject: vi\x80sion\n", 400, "not valid UTF-8", nil},
		"pool: delete unknown":   {"admin", "DELETE", "/v1/pools/vision", ``, 404, "not found", nil},
		"pool: delete in use":    {"admin", "DELETE", "/v1/pools/perception", ``, 409, "still has node g1", nil},
		"pool: delete bad name":  {"admin", "DELETE", "/v1/pools/Perception", ``, 400, "pool name", nil},
		"node: negative cpu":     {"admin", "PUT", "/v1/nodes/n9", `{name: n9, cpu: "-4", memory: 1Gi}`, 400, "cpu", nil},
		"node: overflow memory":  {"admin", "PUT", "/v1/nodes/n9", `{name: n9, cpu: 4, memory: 99999999999Ei}`, 400, "memory", nil},
		"node: 65 accelerators":  {"admin", "PUT", "/v1/nodes/n9", `{name: n9, cpu: 96, memory: 1Ti, accelerators: {type: A100, count: 65}}`, 400, "accelerators.count", nil},
		"node: unknown field":    {"admin", "PUT", "/v1/nodes/n9", `{name: n9, cpu: 4, memory: 1Gi, gpus: 2}`, 400, "gpus is not a known field", nil},
		"node: name mismatch":    {"admin", "PUT", "/v1/nodes/n9", `{name: n8, cpu: 4, memory: 1Gi}`, 400, "does not match", nil},
		"node: uppercase":        {"admin", "PUT", "/v1/nodes/N9", `{name: N9, cpu: 4, memory: 1Gi}`, 400, "node name", nil},
		"node: name too long":    {"admin", "PUT", "/v1/nodes/" + tooLongNode, `{name: ` + tooLongNode + `, cpu: 4, memory: 1Gi}`, 400, "node name", nil},
		"node: unknown pool":     {"admin", "PUT", "/v1/nodes/n9", `{name: n9, pool: vision, cpu: 4, memory: 1Gi}`, 400, `pool "vision" does not exist`, nil},
		"node: unknown cluster":  {"admin", "PUT", "/v1/nodes/n9", `{name: n9, cluster: remote, cpu: 4, memory: 1Gi}`, 400, `cluster "remote" does not exist`, nil},
		"node: empty":            {"admin", "PUT", "/v1/nodes/n9", ``, 400, "send a node spec", nil},
		"node: bad UTF-8":        {"admin", "PUT", "/v1/nodes/n9", "name: n9\ncpu: 4\nmemory: 1Gi\ntags: {a: \"\xff\"}\n", 400, "not valid UTF-8", nil},
		"node: delete unknown":   {"admin", "DELETE", "/v1/nodes/n9", ``, 404, "not found", nil},
		"node: delete busy":      {"admin", "DELETE", "/v1/nodes/g1", ``, 409, "still runs task", nil},
		"cluster: new backend":   {"admin", "PUT", "/v1/clusters/local", `{name: local, backend: kubernetes, namespace: jobs}`, 409, "nodes on backend local: a cluster with nodes cannot change backend to kubernetes (its tasks run there): add a new cluster with backend kubernetes instead", nil},
		"release: unknown node":  {"admin", "POST", "/v1/nodes/n9/release", `{}`, 404, "node n9", nil},
		"release: bad node name": {"admin", "POST", "/v1/nodes/N9/release", `{}`, 400, "node name", nil},
		"release: index 8":       {"admin", "POST", "/v1/nodes/g1/release", `{"accelerators": [8]}`, 400, "accelerator 8 is not allowed: use 0 to 7", nil},
		"release: negative":      {"admin", "POST", "/v1/nodes/g1/release", `{"accelerators": [-1]}`, 400, "use 0 to 7", nil},
		"release: twice":         {"admin", "POST", "/v1/nodes/g1/release", `{"accelerators": [1, 1]}`, 400, "accelerators lists 1 twice", nil},
		"release: string":        {"admin", "POST", "/v1/nodes/g1/release", `{"accelerators": "0,1"}`, 400, "accelerators", nil},
		"release: unknown field": {"admin", "POST", "/v1/nodes/g1/release", `{"accels": [1]}`, 400, `unknown field "accels"`, nil},
		"release: empty":         {"admin", "POST", "/v1/nodes/g1/release", ``, 400, "request body is empty: send a release request ({} for every", nil},
		"release: CPU node":      {"admin", "POST", "/v1/nodes/c1/release", `{"accelerators": [0]}`, 400, "node c1 has no accelerators", nil},
		"cluster: bad backend":   {"admin", "PUT", "/v1/clusters/remote", `{name: remote, backend: nomad}`, 400, `backend "nomad" is not allowed: use local or kubernetes`, nil},
		"cluster: bad redis":     {"admin", "PUT", "/v1/clusters/remote", `{name: remote, redis: nohost}`, 400, "redis", nil},
		"cluster: unknown field": {"admin", "PUT", "/v1/clusters/remote", `{name: remote, masterURL: /x}`, 400, "masterURL is not a known field", nil},
		"cluster: name mismatch": {"admin", "PUT", "/v1/clusters/remote", `{name: other}`, 400, "does not match", nil},
		"cluster: uppercase":     {"admin", "PUT", "/v1/clusters/Remote", `{name: Remote}`, 400, "cluster name", nil},
		"cluster: too long":      {"admin", "PUT", "/v1/clusters/" + long, `{name: ` + long + `}`, 400, "cluster name", nil},
		"cluster: not a mapping": {"admin", "PUT", "/v1/clusters/remote", `[remote]`, 400, "cluster spec is a YAML or JSON array: write a mapping of fields such as name", nil},
		"cluster: two documents": {"admin", "PUT", "/v1/clusters/remote", "name: remote\n---\nname: other\n", 400, "several YAML documents", nil},
		"cluster: duplicate key": {"admin", "PUT", "/v1/clusters/remote", "name: remote\nname: remote\n", 400, "name", nil},
		"cluster: empty":         {"admin", "PUT", "/v1/clusters/remote", ``, 400, "send a cluster spec", nil},
		"cluster: bad UTF-8":     {"admin", "PUT", "/v1/clusters/remote", "name: re\xc0mote\n", 400, "not valid UTF-8", nil},

		// POST /v1/tasks/{id}/heartbeat
		"heartbeat: unknown field":   {"alloc", "POST", task0, `{"state": "Running", "pid": 1}`, 400, `unknown field "pid"`, nil},
		"heartbeat: state Lost":      {"alloc", "POST", task0, `{"state": "Lost"}`, 400, "use Running, Succeeded or Failed", nil},
		"heartbeat: bad state":       {"alloc", "POST", task0, `{"state": "Exploded"}`, 400, "state", nil},
		"heartbeat: other task":      {"alloc", "POST", task0, `{"task": "web-1-1-a0", "state": "Failed"}`, 400, "does not match", nil},
		"heartbeat: empty":           {"alloc", "POST", task0, ``, 400, "request body is empty", nil},
		"heartbeat: bad UTF-8":       {"alloc", "POST", task0, "{\"state\": \"Failed\", \"message\": \"\xff\"}", 400, "not valid UTF-8", nil},
		"heartbeat: long message":    {"alloc", "POST", task0, `{"state": "Failed", "message": "` + strings.Repeat("m", 5000) + `"}`, 400, "message", nil},
		"heartbeat: exit overflow":   {"alloc", "POST", task0, `{"state": "Failed", "exitCode": 1e40}`, 400, "exitCode", nil},
		"heartbeat: bad reason":      {"alloc", "POST", task0, `{"state": "Failed", "reason": "Cosmic"}`, 400, `reason "Cosmic" is not allowed: use PreflightFailed, StoppedOutside, CoordinatorLost, LauncherGone or leave it out`, nil},
		"heartbeat: reason, Running": {"alloc", "POST", task0, `{"state": "Running", "reason": "PreflightFailed"}`, 400, "only allowed with state Failed", nil},
		"heartbeat: lone accels":     {"alloc", "POST", task0, `{"state": "Failed", "accelerators": [0]}`, 400, "only allowed with reason PreflightFailed", nil},
		"heartbeat: accel 64":        {"alloc", "POST", task0, `{"state": "Failed", "reason": "PreflightFailed", "accelerators": [64]}`, 400, "accelerator 64 is not allowed", nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := apitest.NewEnv(t, "")
			submit(t, e, "u1", "web-1", webSpec)
			submit(t, e, "u1", "low-1", lowSpec)
			submit(t, e, "u1", "pub-1", `{kind: service, command: [true], name: pub, replicas: 2, minAvailable: 1, resources: {accelerators: {type: A100, count: 4}}}`)
			submit(t, e, "u1", "done-1", `{kind: command, command: [true], name: done, priority: low, resources: {cpu: "1"}}`)
			e.Store.Schedule(t, apitest.T0)
			for _, tk := range e.Store.Tasks("done-1") {
				e.Store.Report(t, tk.ID, structs.TaskSucceeded, apitest.T0)
			}
			require.Equal(t, structs.JobSucceeded, e.Store.Job("done-1").State)
			tok := e.Tokens[structs.UserID(c.as)]
			if c.as == "alloc" {
				tok = e.Store.Tokens()["web-1-0-a0"]
				require.NotEmpty(t, tok)
			}
			before := e.Store.StateJSON(t)
			status, body := do(t, e, tok, c.method, c.path, c.body, c.hdr...)
			assert.Equal(t, c.status, status, body)
			assert.Contains(t, errMsg(t, body), c.msg)
			assert.Equal(t, before, e.Store.StateJSON(t), "nothing changes")
		})
	}
}

func TestSubmitErrorsCarryDetails(t *testing.T) {
	t.Parallel()
	e := apitest.NewEnv(t, "")
	submit(t, e, "u1", "first-1", `{kind: command, command: [true], name: first, resources: {accelerators: {type: A100, count: 8}}}`)
	status, body := do(t, e, e.Tokens["u1"], "POST", "/v1/jobs", `{kind: command, command: [true], name: second, resources: {accelerators: {type: A100, count: 1}}}`)
	assert.Equal(t, http.StatusConflict, status)
	assert.JSONEq(t, `{"error": "quota exceeded for user:u1: gpu/A100 quota 8, in use 8, requested 1",
		"quota": {"scope": "user:u1", "key": "gpu/A100", "asked": 1, "used": 8, "limit": 8}}`, body)

	status, body = do(t, e, e.Tokens["u1"], "POST", "/v1/jobs", `{kind: command, command: [true], name: big, resources: {accelerators: {type: A100, count: 9}}}`)
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, body, `"why":{"neverFits":true`)
}
