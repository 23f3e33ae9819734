package daemon_test

import "github.com/atom-sched/atom/coordinator/state"

type stateView = state.State
