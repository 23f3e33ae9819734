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

// writes is a count of the API server's requests by
// resource[/subresource], from its /metrics.
type writes map[string]float64

// requests are the API server's requests since it started, by kind.
type requests struct {
	writes  writes // POST, PUT, PATCH, DELETE
	reads   writes // GET, LIST
	watches writes // WATCH, those that ended and those still open
	open    writes // WATCH still open
}

func apiRequests(ctx context.Context, c *k8stest.Cluster) (requests, error) {
	raw, err := c.Admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return requests{}, fmt.Errorf("read the API server's metrics: %w", err)
	}
	r := requests{writes: writes{}, reads: writes{}, watches: writes{}, open: writes{}}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		metric, rest, ok := strings.Cut(sc.Text(), "{")
		if !ok || (metric != "apiserver_request_total" && metric != "apiserver_longrunning_requests") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		total := metric == "apiserver_request_total"
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE":
			if total {
				r.writes[key] += n
			}
		case "GET", "LIST":
			if total {
				r.reads[key] += n
			}
		case "WATCH":
			r.watches[key] += n
			if !total {
				r.open[key] += n
			}
		}
	}
	return r, sc.Err()
}

// since returns the requests made after before was taken, in all and as
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
