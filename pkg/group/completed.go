package group

import (
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// CheckCompleted checks the completed ranges of a commit of next against the contract
// (wire.CheckCompleted); a bad one is ErrInvalid.
func CheckCompleted(next int64, completed []store.OffsetRange) error {
	if err := wire.CheckCompleted(next, ToWire(completed)); err != nil {
		return invalidf("%v", err)
	}
	return nil
}

// ToWire converts offset ranges to the contract's [from, to] pairs (nil stays nil).
func ToWire(rs []store.OffsetRange) []wire.OffsetRange {
	if rs == nil {
		return nil
	}
	out := make([]wire.OffsetRange, len(rs))
	for i, r := range rs {
		out[i] = wire.OffsetRange{r.From, r.To}
	}
	return out
}

// FromWire converts the contract's [from, to] pairs to offset ranges (nil stays nil).
func FromWire(rs []wire.OffsetRange) []store.OffsetRange {
	if rs == nil {
		return nil
	}
	out := make([]store.OffsetRange, len(rs))
	for i, r := range rs {
		out[i] = store.OffsetRange{From: r[0], To: r[1]}
	}
	return out
}
