package dynamo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stratalog/strata/pkg/store"
)

// conditionFailed is a single-item write whose ConditionExpression was false. item is
// the item as it was, when the request asked for ALL_OLD and there was one. Every
// conditional operation turns it into its domain error; it never reaches callers.
type conditionFailed struct {
	op   string
	item item
	err  error
}

func (e *conditionFailed) Error() string {
	return fmt.Sprintf("dynamo: %s: condition failed: %v", e.op, e.err)
}
func (e *conditionFailed) Unwrap() error { return e.err }

// txConditionFailed is a transaction cancelled because the condition of one or more of
// its items was false. failed[i] tells whether item i's condition failed, items[i] is
// that item as it was (with ALL_OLD). Callers turn it into their domain error.
type txConditionFailed struct {
	op     string
	failed []bool
	items  []item
	err    error
}

func (e *txConditionFailed) Error() string {
	return fmt.Sprintf("dynamo: %s: transaction condition failed %v: %v", e.op, e.failed, e.err)
}
func (e *txConditionFailed) Unwrap() error { return e.err }

// failedAt reports whether item i of the transaction failed its condition.
func (e *txConditionFailed) failedAt(i int) bool { return i < len(e.failed) && e.failed[i] }

// fencedOutcome is the answer of a fenced write: a transaction whose first item checks
// the caller's lease (the assignment's owner and generation) and whose second is the
// write. The check failing is store.ErrFenced; the write's own condition failing is
// onWrite (nil: the write has none, and any other failure is returned as mapped).
func fencedOutcome(op string, err, onWrite error) error {
	if err == nil {
		return nil
	}
	err = mapError(op, err)
	var tx *txConditionFailed
	switch {
	case !errors.As(err, &tx):
		return err
	case tx.failedAt(0):
		return fmt.Errorf("dynamo: %s: %w", op, store.ErrFenced)
	case onWrite == nil:
		return err
	case tx.failedAt(1):
		return fmt.Errorf("dynamo: %s: %w", op, onWrite)
	}
	return fmt.Errorf("dynamo: %s: unexpected cancellation: %w", op, err)
}

// retryableCode reports whether an error code (of a response or of a transaction's
// cancellation reason) means "try again": throttling, contention, server-side failure.
func retryableCode(code string) bool {
	switch code {
	case "ProvisionedThroughputExceededException", "ProvisionedThroughputExceeded",
		"RequestLimitExceeded", "ThrottlingException", "ThrottlingError", "Throttling",
		"TransactionConflictException", "TransactionConflict", "TransactionInProgressException",
		"ReplicatedWriteConflictException", "InternalServerError", "ServiceUnavailable":
		return true
	}
	return false
}

// mapError is the one place where DynamoDB's native errors are classified: a failed
// condition becomes *conditionFailed, a transaction cancelled by a failed condition
// *txConditionFailed (both for the operation to turn into its domain error), a missing
// table a plain error saying so (not store.ErrNotFound: it is a deployment fault, not a
// missing row), and throttling, transaction conflicts, 5xx and network failures, left
// after the SDK's own retries, store.ErrUnavailable. The native error stays in the chain.
func mapError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("dynamo: %s: %w", op, err)
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return &conditionFailed{op: op, item: ccf.Item, err: err}
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		tx := &txConditionFailed{op: op, err: err}
		anyFailed, retryable := false, false
		for _, r := range tce.CancellationReasons {
			code := ""
			if r.Code != nil {
				code = *r.Code
			}
			failed := code == "ConditionalCheckFailed"
			anyFailed = anyFailed || failed
			retryable = retryable || retryableCode(code)
			tx.failed = append(tx.failed, failed)
			tx.items = append(tx.items, r.Item)
		}
		switch {
		case anyFailed:
			return tx
		case retryable:
			return fmt.Errorf("dynamo: %s: %w: %w", op, store.ErrUnavailable, err)
		}
		return fmt.Errorf("dynamo: %s: %w", op, err)
	}
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return fmt.Errorf("dynamo: %s: table missing (deploy the stack, or create the tables and bucket with `strata dev --backend aws --bootstrap`): %w", op, err)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && retryableCode(apiErr.ErrorCode()) {
		return fmt.Errorf("dynamo: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) && (respErr.HTTPStatusCode() >= 500 || respErr.HTTPStatusCode() == 429) {
		return fmt.Errorf("dynamo: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("dynamo: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("dynamo: %s: %w", op, err)
}
