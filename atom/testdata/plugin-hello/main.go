// Command plugin-hello is an external job-type plugin for atom's tests,
// installed as atom-plugin-hello: kind hello runs the job's command.
package main

import (
	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/plugins/command"
)

func main() { plugin.Serve(command.New("hello")()) }
