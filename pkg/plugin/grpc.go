package plugin

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/atom-sched/atom/pkg/plugin/proto"
)

// GRPCPlugin adapts a JobType to go-plugin's gRPC transport: the plugin
// side sets Impl; the host side dispenses a JobType client.
type GRPCPlugin struct {
	goplugin.Plugin // net/rpc is not served: gRPC only
	Impl            JobType
}

// GRPCServer registers Impl on the plugin's gRPC server.
func (p *GRPCPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterJobTypeServer(s, &grpcServer{impl: p.Impl})
	return nil
}

// GRPCClient returns the host's view of the plugin.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &grpcClient{c: pb.NewJobTypeClient(c)}, nil
}

type grpcServer struct {
	pb.UnimplementedJobTypeServer
	impl JobType
}

func (s *grpcServer) Info(ctx context.Context, _ *pb.InfoRequest) (*pb.InfoResponse, error) {
	i, err := s.impl.Info(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.InfoResponse{Kind: i.Kind, ApiVersions: i.APIVersions, Version: i.Version}, nil
}

func (s *grpcServer) Prepare(ctx context.Context, r *pb.PrepareRequest) (*pb.PrepareResponse, error) {
	t := r.GetTask()
	ex, err := s.impl.Prepare(ctx, r.GetApiVersion(), Task{
		Job: t.GetJobId(), ID: t.GetTaskId(), Kind: t.GetKind(),
		Replica: int(t.GetReplica()), Replicas: int(t.GetReplicas()), Attempt: int(t.GetAttempt()),
		Command: t.GetCommand(), Env: t.GetEnv(), Dir: t.GetDir(),
		Coordinator: t.GetCoordinator(), Token: t.GetToken(), JobJSON: t.GetJobJson(),
		AccelType: t.GetAccelType(), Accelerators: int(t.GetAccelerators()),
	})
	if err != nil {
		// A refusal is the plugin's answer, not a transport failure.
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &pb.PrepareResponse{Argv: ex.Argv, Env: ex.Env, ServeLaunches: ex.ServeLaunches}, nil
}

type grpcClient struct{ c pb.JobTypeClient }

func (c *grpcClient) Info(ctx context.Context) (Info, error) {
	r, err := c.c.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return Info{}, fromStatus("info", err)
	}
	return Info{Kind: r.GetKind(), APIVersions: r.GetApiVersions(), Version: r.GetVersion()}, nil
}

func (c *grpcClient) Prepare(ctx context.Context, api string, t Task) (Exec, error) {
	r, err := c.c.Prepare(ctx, &pb.PrepareRequest{ApiVersion: api, Task: &pb.Task{
		JobId: t.Job, TaskId: t.ID, Kind: t.Kind,
		Replica: int32(t.Replica), Replicas: int32(t.Replicas), Attempt: int32(t.Attempt),
		Command: t.Command, Env: t.Env, Dir: t.Dir,
		Coordinator: t.Coordinator, Token: t.Token, JobJson: t.JobJSON,
		AccelType: t.AccelType, Accelerators: int32(t.Accelerators),
	}})
	if err != nil {
		return Exec{}, fromStatus("prepare", err)
	}
	return Exec{Argv: r.GetArgv(), Env: r.GetEnv(), ServeLaunches: r.GetServeLaunches()}, nil
}

// fromStatus turns a gRPC error into the plugin's own message, or
// ErrPluginExited when the process went away (as Nomad's grpcutils does).
func fromStatus(call string, err error) error {
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch s.Code() {
	case codes.Unavailable, codes.Canceled:
		return fmt.Errorf("%w during %s: %s", ErrPluginExited, call, s.Message())
	case codes.FailedPrecondition, codes.Internal:
		return fmt.Errorf("%s", s.Message())
	default:
		return fmt.Errorf("%s: %s", s.Code(), s.Message())
	}
}
