package log

import "sync"

// notifier wakes pollers waiting on a partition when this process appends to it.
type notifier struct {
	mu    sync.Mutex
	chans map[tpKey]chan struct{}
}

func newNotifier() *notifier { return &notifier{chans: map[tpKey]chan struct{}{}} }

// wait returns a channel closed at the next notify of k.
func (n *notifier) wait(k tpKey) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.chans[k]
	if !ok {
		c = make(chan struct{})
		n.chans[k] = c
	}
	return c
}

func (n *notifier) notify(k tpKey) {
	n.mu.Lock()
	c, ok := n.chans[k]
	delete(n.chans, k)
	n.mu.Unlock()
	if ok {
		close(c)
	}
}
