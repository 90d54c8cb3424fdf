package group

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/kgroup"
	"github.com/stratalog/strata/pkg/store"
)

// refuseKafkaGroup returns ErrKafkaGroup when group's barrier row (the Kafka gateway's
// classic-protocol state) holds members live at now: a group is either a Kafka group or
// a Strata group at a time. A store without barriers, or a group not created yet, has
// no Kafka members. It reads, then the caller acts: a Kafka member joining between the
// read and the caller's lease or heartbeat is not seen here, and is refused by the
// gateway's own check only if that heartbeat landed first (docs/KAFKA.md).
func refuseKafkaGroup(ctx context.Context, st Store, group string, now time.Time) error {
	bs, ok := st.(store.GroupBarrierStore)
	if !ok {
		return nil
	}
	b, err := bs.GetBarrier(ctx, group)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("group: Kafka members of %s: %w", group, err)
	}
	n, err := kgroup.LiveMembers(b.State, now)
	if err != nil {
		return fmt.Errorf("group: Kafka members of %s: %w", group, err)
	}
	if n > 0 {
		return fmt.Errorf("%w: group %q has %d live Kafka member(s); stop them (or let their sessions end) before starting a Strata member", ErrKafkaGroup, group, n)
	}
	return nil
}

// GetBarrier passes the group's barrier row through, so the coordinator's view of the
// store still shows Kafka membership; ErrUnsupported when the store keeps none.
func (s *byIncarnation) GetBarrier(ctx context.Context, group string) (store.Barrier, error) {
	bs, ok := s.Store.(store.GroupBarrierStore)
	if !ok {
		return store.Barrier{}, ErrUnsupported
	}
	return bs.GetBarrier(ctx, group)
}

// SwapBarrier passes a swap of the group's barrier row through.
func (s *byIncarnation) SwapBarrier(ctx context.Context, group string, version int64, state []byte) (store.Barrier, error) {
	bs, ok := s.Store.(store.GroupBarrierStore)
	if !ok {
		return store.Barrier{}, ErrUnsupported
	}
	return bs.SwapBarrier(ctx, group, version, state)
}
