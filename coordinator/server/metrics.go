package server

import (
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, on a registry of its own
// (one per server, so several servers can run in one process).
type metrics struct {
	reg           *prometheus.Registry
	pending       prometheus.Gauge
	placements    prometheus.Counter
	rejected      prometheus.Counter
	planCommit    prometheus.Histogram
	schedule      prometheus.Histogram
	apply         *prometheus.HistogramVec
	leaderChanges prometheus.Counter
	heartbeats    prometheus.Counter
	lost          prometheus.Counter
}

// latency buckets: 0.25 ms to about 8 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.00025, 2, 16)

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "atom_jobs_pending", Help: "Jobs waiting for placement at the leader's last scheduling cycle.",
		}),
		placements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "atom_placements_total", Help: "Job placements committed by this server as leader.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "atom_placements_rejected_total", Help: "Placements the state machine rejected at commit because the plan was stale.",
		}),
		planCommit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "atom_plan_commit_seconds", Help: "Time to commit one scheduling plan through Raft.", Buckets: latencyBuckets,
		}),
		schedule: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "atom_schedule_seconds", Help: "Time the scheduling core took for one cycle.", Buckets: latencyBuckets,
		}),
		apply: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "atom_raft_apply_seconds", Help: "Time from Raft apply to the command applied on the leader, by command.", Buckets: latencyBuckets,
		}, []string{"command"}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "atom_raft_leader_changes_total", Help: "Leader changes this server observed.",
		}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "atom_heartbeats_total", Help: "Task heartbeats accepted by this server as leader.",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "atom_tasks_lost_total", Help: "Tasks this server as leader declared lost after the heartbeat TTL.",
		}),
	}
	m.reg.MustRegister(m.pending, m.placements, m.rejected, m.planCommit, m.schedule, m.apply,
		m.leaderChanges, m.heartbeats, m.lost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// register adds the metrics that read the server's live state.
func (m *metrics) register(s *Server) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "atom_raft_leader", Help: "1 when this server is the Raft leader.",
		}, func() float64 {
			if s.IsLeader() {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "atom_raft_applied_index", Help: "Last log index applied to this server's state.",
		}, func() float64 { return float64(s.raft.AppliedIndex()) }),
	)
}

// watchLeader registers a Raft observer for leader changes and starts
// counting them.
func (s *Server) watchLeader() {
	ch := make(chan raft.Observation, 16)
	s.obs = raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(s.obs)
	s.wg.Add(1)
	go s.observe(ch)
}

// observe counts leader changes until shutdown.
func (s *Server) observe(ch <-chan raft.Observation) {
	defer s.wg.Done()
	var last raft.ServerID
	for {
		select {
		case <-s.shutdownCh:
			return
		case o := <-ch:
			lo := o.Data.(raft.LeaderObservation)
			if lo.LeaderID != last && lo.LeaderID != "" {
				s.metrics.leaderChanges.Inc()
				s.log.Info("leader changed", "leader", lo.LeaderID, "addr", lo.LeaderAddr)
			}
			last = lo.LeaderID
		}
	}
}
