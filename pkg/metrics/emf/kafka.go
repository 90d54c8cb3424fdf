package emf

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/deploy"
)

// The Kafka gateway's request metrics (per {api}, and rolled up over every API).
const (
	KafkaRequests           = deploy.MetricKafkaRequests
	KafkaServerErrors       = deploy.MetricKafkaServerErrors
	KafkaRequestDurationMax = deploy.MetricKafkaRequestDurationMax
)

// KafkaGateway implements kafka.RequestMetrics for a long-running gateway: it sums the
// requests per API and writes one line per API per flush (Run's interval) instead of
// one per request, so a busy gateway's metrics cost a few log lines a minute.
type KafkaGateway struct {
	sink *Sink
	mu   sync.Mutex
	apis map[string]*kafkaWindow
}

type kafkaWindow struct {
	requests, serverErrors int
	max                    time.Duration
}

// NewKafkaGateway returns the gateway's request metrics, written to sink.
func NewKafkaGateway(sink *Sink) *KafkaGateway {
	return &KafkaGateway{sink: sink, apis: map[string]*kafkaWindow{}}
}

// Request records one request.
func (k *KafkaGateway) Request(api string, elapsed time.Duration, serverError bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.apis[api]
	if w == nil {
		w = &kafkaWindow{}
		k.apis[api] = w
	}
	w.requests++
	if serverError {
		w.serverErrors++
	}
	w.max = max(w.max, elapsed)
}

// Flush writes what was recorded since the last flush, one line per API (in name
// order), and starts a new window.
func (k *KafkaGateway) Flush() {
	k.mu.Lock()
	apis := k.apis
	k.apis = map[string]*kafkaWindow{}
	k.mu.Unlock()
	names := make([]string, 0, len(apis))
	for api := range apis {
		names = append(names, api)
	}
	sort.Strings(names)
	for _, api := range names {
		w := apis[api]
		k.sink.EmitRollup([][2]string{{"api", api}},
			Metric{KafkaRequests, UnitCount, float64(w.requests)},
			Metric{KafkaServerErrors, UnitCount, float64(w.serverErrors)},
			Metric{KafkaRequestDurationMax, UnitSeconds, w.max.Seconds()})
	}
}

// Run flushes every interval until ctx ends, then once more.
func (k *KafkaGateway) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			k.Flush()
			return
		case <-t.C:
			k.Flush()
		}
	}
}
