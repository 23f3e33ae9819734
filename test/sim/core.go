package main

import "github.com/atom-sched/atom/pkg/sched"

// coreSchedule is the scheduling core the atom policy calls.
var coreSchedule scheduleFunc = sched.Schedule
