package rsh

import "sync"

// refusedAt holds, by endpoint, the channel each refused try is sent to.
var refusedAt sync.Map

func init() {
	refused = func(endpoint string) {
		if ch, ok := refusedAt.Load(endpoint); ok {
			select {
			case ch.(chan struct{}) <- struct{}{}:
			default:
			}
		}
	}
}

// NotifyRefused returns a channel that receives when a launch to
// endpoint was refused and will be tried again.
func NotifyRefused(endpoint string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	refusedAt.Store(endpoint, ch)
	return ch
}
