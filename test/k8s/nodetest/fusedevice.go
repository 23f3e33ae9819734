package nodetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/atom-sched/atom/coordinator/kube"
)

// FuseDevices is how many Pods at a time the node's FUSE device plugin
// gives /dev/fuse (kube.FuseResource on the Node).
const FuseDevices = 16

// StartFuseDevicePlugin serves the kubelet's device plugin API on the real
// node, as a cluster's FUSE device plugin does (generic-device-plugin, see
// coordinator/README.md): it advertises FuseDevices units of
// kube.FuseResource, and a container given one gets the host's /dev/fuse
// through the runtime, which also allows the device in the container's
// device cgroup (a hostPath /dev/fuse alone is refused there). It registers
// again when a restarted kubelet has removed its socket, and stops when t
// ends. It returns once the Node has the resource allocatable.
func (e *Env) StartFuseDevicePlugin(t *testing.T) {
	t.Helper()
	start := time.Now()
	p := &fusePlugin{stop: make(chan struct{}), sock: filepath.Join(pluginapi.DevicePluginPath, fmt.Sprintf("atom-test-fuse-%d.sock", os.Getpid()))}
	require.NoError(t, p.serve())
	require.NoError(t, p.register())
	done := make(chan struct{})
	go p.watch(done)
	t.Cleanup(func() {
		close(p.stop)
		<-done
		p.mu.Lock()
		p.srv.Stop()
		p.mu.Unlock()
		_ = os.Remove(p.sock)
	})
	require.Eventually(t, func() bool {
		n, err := e.Cluster.Admin.CoreV1().Nodes().Get(context.Background(), e.Node.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		q, ok := n.Status.Allocatable[kube.FuseResource]
		return ok && q.Value() == FuseDevices
	}, time.Minute, 100*time.Millisecond, "node %s has %d %s allocatable (the kubelet's next status update)", e.Node.Name, FuseDevices, kube.FuseResource)
	t.Logf("fuse device plugin registered: node %s has %d %s allocatable after %.1fs", e.Node.Name, FuseDevices, kube.FuseResource, time.Since(start).Seconds())
}

type fusePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	sock string
	stop chan struct{}
	mu   sync.Mutex
	srv  *grpc.Server
}

func (p *fusePlugin) serve() error {
	_ = os.Remove(p.sock)
	l, err := net.Listen("unix", p.sock)
	if err != nil {
		return fmt.Errorf("fuse device plugin: %w", err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	return nil
}

// register tells the kubelet about the plugin (Registration.Register on
// its socket).
func (p *fusePlugin) register() error {
	conn, err := grpc.NewClient("unix://"+pluginapi.KubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: filepath.Base(p.sock), ResourceName: kube.FuseResource})
	if err != nil {
		return fmt.Errorf("fuse device plugin: register with the kubelet: %w", err)
	}
	return nil
}

// watch serves and registers again once a restarted kubelet has removed
// the plugin's socket (it empties the directory when it starts).
func (p *fusePlugin) watch(done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		if _, err := os.Stat(p.sock); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		p.mu.Lock()
		p.srv.Stop()
		p.mu.Unlock()
		if p.serve() != nil {
			continue
		}
		for p.register() != nil {
			select {
			case <-p.stop:
				return
			case <-time.After(500 * time.Millisecond): // the kubelet is not back yet
			}
		}
	}
}

func (p *fusePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *fusePlugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	devs := make([]*pluginapi.Device, FuseDevices)
	for i := range devs {
		devs[i] = &pluginapi.Device{ID: fmt.Sprintf("fuse-%d", i), Health: pluginapi.Healthy}
	}
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
		return err
	}
	select {
	case <-p.stop:
	case <-s.Context().Done():
	}
	return nil
}

func (p *fusePlugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for range r.ContainerRequests {
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Devices: []*pluginapi.DeviceSpec{{ContainerPath: "/dev/fuse", HostPath: "/dev/fuse", Permissions: "rw"}}})
	}
	return out, nil
}

func (p *fusePlugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
