package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// writes is the API server's count of write requests (POST, PUT, PATCH,
// DELETE) by resource[/subresource], from its /metrics.
type writes map[string]float64

func apiWrites(ctx context.Context, c *k8stest.Cluster) (writes, error) {
	raw, err := c.Admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	w := writes{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE":
		default:
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		w[key] += n
	}
	return w, sc.Err()
}

// since returns the writes made after before was taken, in all and as
// "resource:n,..." (the largest first).
func (w writes) since(before writes) (int, string) {
	d := map[string]int{}
	total := 0
	for k, v := range w {
		if n := int(v - before[k]); n > 0 {
			d[k], total = n, total+n
		}
	}
	keys := slices.SortedFunc(maps.Keys(d), func(a, b string) int {
		if d[a] != d[b] {
			return d[b] - d[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, d[k]))
	}
	return total, strings.Join(parts, ",")
}
