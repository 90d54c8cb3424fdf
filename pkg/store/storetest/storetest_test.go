package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

type memHarness struct{ s *memStore }

func (h memHarness) MakeObjectStore(context.Context) (store.ObjectStore, error) { return h.s, nil }
func (h memHarness) MakeMetaStore(context.Context) (store.MetaStore, error)     { return h.s, nil }
func (h memHarness) Close()                                                     {}

// onlyMeta implements the MetaStore half, as a DynamoDB-only package would.
type onlyMeta struct{ memHarness }

func (onlyMeta) MakeObjectStore(context.Context) (store.ObjectStore, error) {
	return nil, fmt.Errorf("dynamo has no objects: %w", errors.ErrUnsupported)
}

// mutantEnv names the bug TestMutant injects; unset, TestMutant is skipped.
const mutantEnv = "STORETEST_MUTANT"

// TestReference runs the suite against the in-memory reference: it must pass.
func TestReference(t *testing.T) {
	shared := newMemStore("") // one store for every sub-test, as a shared table would be
	RunConformanceTests(t, func(context.Context, *testing.T) (Harness, error) { return memHarness{shared}, nil })
}

// TestHalfHarness checks that a harness implementing one interface skips the other half.
func TestHalfHarness(t *testing.T) {
	ran := false
	RunConformanceTests(t, func(_ context.Context, t *testing.T) (Harness, error) {
		if strings.HasPrefix(t.Name(), "TestHalfHarness/ObjectStore/") && ran {
			t.Errorf("a second ObjectStore sub-test ran after the first reported ErrUnsupported")
		}
		ran = ran || strings.HasPrefix(t.Name(), "TestHalfHarness/ObjectStore/")
		return onlyMeta{memHarness{newMemStore("")}}, nil
	})
}

// TestMutant runs the suite against the reference with the bug named by $STORETEST_MUTANT.
func TestMutant(t *testing.T) {
	bug := os.Getenv(mutantEnv)
	if bug == "" {
		t.Skip(mutantEnv + " not set; TestMutants runs this")
	}
	RunConformanceTests(t, func(context.Context, *testing.T) (Harness, error) { return memHarness{newMemStore(bug)}, nil })
}

// TestMutants checks that the suite fails each injected bug, in the sub-test meant to
// catch it: a suite that passes broken stores specifies nothing.
func TestMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per bug in a subprocess")
	}
	for bug, catcher := range map[string]string{
		"ObjectPutOverwrites":         "ObjectStore/Objects/PutIfAbsentKeepsFirst",
		"ObjectExpiryDropped":         "ObjectStore/Objects/ExpiryMarks",
		"KeepKeepsMark":               "ObjectStore/Objects/ExpiryMarks",
		"ClearExpiryBlind":            "IndexExpiryClearer/ClearExpiry/ChangedOrMissingRefused",
		"LagKeepsAll":                 "LagHistoryStore/LagHistory/RingKeepsNewestAndDropsGonePartitions",
		"ProducerPutBlind":            "ProducerStore/Producers/RowPutIsConditionalOnVersion",
		"ProducerIDRace":              "ProducerStore/Producers/IDsUniqueAcrossCallers",
		"RetentionChangesPin":         "RetentionStore/Retention/SetKeepsTheRest",
		"CleanupKeepsLags":            "CleanupStore/Cleanup/SetKeepsTheRest",
		"KeyPutBlind":                 "KeyIndexStore/Keys/NeverMovesBack",
		"DirtyClaimBlind":             "DirtyCounterStore/DirtyCounters/ClaimOnlyOnSeen",
		"KeyReplacedNever":            "KeyIndexStore/Keys/NeverMovesBack",
		"KeyDeleteBlind":              "KeyIndexStore/Keys/NeverMovesBack",
		"PurgeKeysByPrefix":           "IncarnationPurger/Purge/KeysOfOneIncarnation",
		"PurgeKeepsCounters":          "IncarnationPurger/Purge/KeysOfOneIncarnation",
		"PurgeParkedByPrefix":         "IncarnationPurger/Purge/ParkedOfOneGroupAndIncarnation",
		"ObjectPutRace":               "ObjectStore/Objects/ConcurrentPutOneWins",
		"ObjectShortRead":             "ObjectStore/Objects/RangePastEndOrInvalid",
		"ObjectDeleteMissingFails":    "ObjectStore/Objects/DeleteIdempotent",
		"ObjectDeleteBatchPrefix":     "ObjectStore/Objects/DeleteBatchExactlyTheKeys",
		"ObjectListDirOrder":          "ObjectStore/Objects/ListPrefixInKeyOrder",
		"ObjectListPathPrefix":        "ObjectStore/Objects/ListPrefixInKeyOrder",
		"ObjectListIgnoresError":      "ObjectStore/Objects/ListStopsAtCallbackError",
		"CreateTopicRace":             "MetaStore/Races/CreateTopicOnce",
		"ZeroTimeNotKept":             "MetaStore/Index/FieldsRoundTrip",
		"IndexKeyCollides":            "MetaStore/Index/PartitionsAndTopicsIsolated",
		"PutEntryOverwrites":          "MetaStore/Index/ConflictHoldsExisting",
		"PutEntryRace":                "MetaStore/Races/PutIndexEntrySameBase",
		"ConflictWithoutEntry":        "MetaStore/Index/ConflictHoldsExisting",
		"IndexDecimalKeys":            "MetaStore/Index/OffsetsAcrossByteBoundaries",
		"EntriesNoContaining":         "MetaStore/Index/EntriesFromContainingEntry",
		"EntriesContainingByEnd":      "MetaStore/Index/EntriesFromContainingEntry",
		"EntriesIgnoreLimit":          "MetaStore/Index/EntriesFromContainingEntry",
		"RangeDeleteTakesHolder":      "MetaStore/Index/DeleteIndexRange",
		"RangeDeleteStopsAtGap":       "MetaStore/Index/DeleteIndexRange",
		"IdemKeyIgnoresPartition":     "MetaStore/Idempotency/KeyIsPerPartition",
		"IdemClaimOverwrites":         "MetaStore/Idempotency/ClaimOnce",
		"RequestClaimOverwrites":      "MetaStore/Idempotency/FoldedClaimSlotsAreWriteOnce",
		"SequenceRace":                "MetaStore/Races/SequencerTilesOffsets",
		"BatchNotAtomic":              "MetaStore/Races/BatchesOrderedAlike",
		"SeedIgnoresIndex":            "MetaStore/Sequencer/SeedsFromLegacyIndex",
		"HWFromIndex":                 "MetaStore/Sequencer/HighWatermarkOutlivesIndex",
		"LogStartPastEnd":             "MetaStore/Partitions/LogStartNeverPassesEnd",
		"LogStartLowers":              "MetaStore/Partitions/LogStartNeverLowers",
		"LeaseLiveAtExpiry":           "MetaStore/Leases/TakeOverExpired",
		"AcquireRace":                 "MetaStore/Races/AcquireFreeLeaseOnce",
		"ReacquireKeepsGeneration":    "MetaStore/Leases/ReacquireBySameMember",
		"RenewIgnoresGeneration":      "MetaStore/Leases/Renew",
		"ReleaseResetsGeneration":     "MetaStore/Leases/Release",
		"LeaseKeyIgnoresIncarnation":  "MetaStore/Leases/IncarnationsIsolated",
		"CommitChecksMemberOnly":      "MetaStore/Commits/FencedChangesNothing",
		"CommitRace":                  "MetaStore/Races/FencedCommitNeverLands",
		"CommitEqualIsStale":          "MetaStore/Commits/OwnerCommitsMonotonic",
		"CommitStaleBeforeFence":      "MetaStore/Commits/FencedChangesNothing",
		"ResetWritesBeforeCheck":      "MetaStore/Commits/ResetRefusedWhileLive",
		"ResetChecksAllTopics":        "MetaStore/Commits/ResetAfterExpiryOrRelease",
		"ResetNeverLowers":            "MetaStore/Commits/ResetAfterExpiryOrRelease",
		"ResetKeepsGenerations":       "MetaStore/Commits/ResetFencesLapsedOwner",
		"CommitKeepsCompleted":        "MetaStore/Commits/CompletedRangesStored",
		"CommitBackwardRefused":       "MetaStore/Commits/BackwardByOwnerOnly",
		"CommitStoresBackward":        "MetaStore/Commits/BackwardByOwnerOnly",
		"CommitIgnoresLease":          "MetaStore/Commits/RenewOrReleaseRidesInCommit",
		"GroupKeyJoinedByHash":        "MetaStore/Names/HostileGroupIDs",
		"ResetKeepsCompleted":         "MetaStore/Commits/CompletedRangesStored",
		"ListGroupByPrefix":           "MetaStore/Commits/ListOrderedAndIsolated",
		"ListPartitionsAsStrings":     "MetaStore/Commits/ListOrderedAndIsolated",
		"EnsureGroupOverwrites":       "MetaStore/Groups/EnsureIdempotent",
		"EnsureGroupRace":             "MetaStore/Races/EnsureGroupAgrees",
		"HeartbeatInsertOnly":         "MetaStore/Groups/MembersHeartbeatLiveRemove",
		"RemoveMissingFails":          "MetaStore/Groups/MembersHeartbeatLiveRemove",
		"LiveMembersInclusive":        "MetaStore/Groups/MembersHeartbeatLiveRemove",
		"DeleteGroupIgnoresMembers":   "GroupAdminStore/Groups/DeleteGroupRefusedWhileActive",
		"DeleteGroupDropsAssignments": "GroupAdminStore/Groups/DeleteGroupRemovesAndFences",
		"DeleteGroupLeavesNoMark":     "GroupAdminStore/Groups/DeleteGroupRemovesAndFences",
		"AcquireForgetsGroupDeleted":  "GroupAdminStore/Groups/DeleteGroupRemovesAndFences",
		"DeleteGroupKeepsParked":      "ParkStore/Parked/DeleteGroupRemovesParked",
		"FencesOmitted":               "MetaStore/Fences/LaterBatchesCarryTheFence",
		"FencePointLate":              "MetaStore/Fences/FencePointIsStateBefore",
		"FenceOverwrites":             "MetaStore/Fences/LowerOrSameAttemptSuperseded",
		"StateWithoutFences":          "MetaStore/Fences/SequencerStateCarriesFences",
		"BatchNumberStale":            "MetaStore/Fences/FencedProducerMemberSkipped",
		"FencesNeverPruned":           "MetaStore/Fences/FencesPrunedByCommitsOnly",
		"FencesUnbounded":             "MetaStore/Fences/FencesBounded",
		"OwnerFencesUnbounded":        "MetaStore/Fences/FencesBoundedPerOwner",
		"FenceAttemptsUnbounded":      "MetaStore/Fences/FenceAttemptsBounded",
		"FenceReplaces":               "MetaStore/Fences/EarlierFenceKeepsApplying",
		"FenceRequestPrunes":          "MetaStore/Fences/FencesPrunedByCommitsOnly",
		"FenceAnyLayout":              "MetaStore/Fences/RefusedFenceChangesNothing",
		"EntryDropsMembers":           "MetaStore/Fences/EntryMembersRoundTrip",
		"ResultDropsMembers":          "MetaStore/Fences/EntryMembersRoundTrip",
		"EntryWithoutBatch":           "MetaStore/Batch/EntryBatchRoundTrip",
		"BarrierIgnoresVersion":       "GroupBarrierStore/Barrier/SwapComparesVersion",
		"BarrierSwapRace":             "GroupBarrierStore/Barrier/ConcurrentSwapsOneWins",
		"DeleteGroupKeepsBarrier":     "GroupBarrierStore/Barrier/DeletedWithGroup",
	} {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMutant$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), mutantEnv+"="+bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store with bug %s", bug)
			}
			if !regexp.MustCompile(`--- FAIL: TestMutant/` + regexp.QuoteMeta(catcher) + ` `).Match(out) {
				t.Fatalf("bug %s was not caught by %s:\n%s", bug, catcher, failures(out))
			}
		})
	}
}

// failures returns the FAIL lines and their messages from go test -v output.
func failures(out []byte) string {
	var b strings.Builder
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "FAIL") || strings.Contains(line, ".go:") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// callBudget bounds the store calls of one suite run: against the serialising emulator
// every call is a request, and the whole suite must stay well under a minute there.
const callBudget = 4300

// TestCallBudget counts the store calls each sub-test makes against the reference.
func TestCallBudget(t *testing.T) {
	var mu sync.Mutex
	var stores []*memStore
	var names []string
	RunConformanceTests(t, func(_ context.Context, t *testing.T) (Harness, error) {
		s := newMemStore("")
		mu.Lock()
		defer mu.Unlock()
		stores, names = append(stores, s), append(names, t.Name())
		return memHarness{s}, nil
	})
	var total int64
	for i, s := range stores {
		n := s.calls.Load()
		total += n
		if n > 200 {
			t.Logf("%5d calls  %s", n, names[i])
		}
	}
	t.Logf("%d calls in %d sub-tests", total, len(stores))
	if total > callBudget {
		t.Errorf("the suite made %d store calls, over its budget of %d", total, callBudget)
	}
}
