package nodetest

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cache/cachetest"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// StartWithRedis is Start with a dataset cache: a real Redis (Debian's
// redis-server, pkg/cache/cachetest) that is the cluster's `redis`,
// listening only on the node's bridge gateway (k8stest.RealNodeGateway),
// where Pods and the test reach it. The gateway's address exists only once
// the node is up, so the port is picked before and Redis started after;
// the coordinator asks a Redis for datasets only for pending jobs, so it
// never finds it missing. The client is the test's, for loading datasets.
func StartWithRedis(t *testing.T, o Options) (*Env, *cachetest.Server, *cache.Client) {
	t.Helper()
	port := cachetest.FreePort(t, "127.0.0.1")
	o.Redis = net.JoinHostPort(k8stest.RealNodeGateway, strconv.Itoa(port))
	e := Start(t, o)
	require.Equal(t, k8stest.RealNodeGateway, e.Node.Gateway)
	srv := cachetest.StartRedisOn(t, e.Node.Gateway, port)
	c, err := cache.New(cache.Options{Addr: srv.Addr})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.Init(context.Background()))
	return e, srv, c
}
