package local

import "sync"

// eventBuffer is the capacity of the channel Events returns; the queue
// behind it has no bound.
const eventBuffer = 64

// eventQueue is an unbounded FIFO in front of a buffered channel: push never
// blocks, so the reapers never wait on a slow reader. One goroutine (run)
// moves events to the channel and closes it after close once all are
// delivered.
type eventQueue struct {
	out chan Event

	mu     sync.Mutex
	cond   *sync.Cond // signalled on push and close; uses mu
	items  []Event    // guarded by mu
	closed bool       // guarded by mu
}

func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan Event, eventBuffer)}
	q.cond = sync.NewCond(&q.mu)
	go q.run()
	return q
}

// push queues ev. It never comes after close: Backend.Close closes the queue
// only once no Start can run and every reaper has returned.
func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, ev)
	q.cond.Signal()
}

// close ends the stream: run delivers what is queued, then closes out.
// Closing twice is harmless.
func (q *eventQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Signal()
}

func (q *eventQueue) run() {
	defer close(q.out)
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.items) == 0 {
			q.mu.Unlock()
			return
		}
		ev := q.items[0]
		q.items[0] = Event{}
		q.items = q.items[1:]
		q.mu.Unlock()
		q.out <- ev
	}
}
