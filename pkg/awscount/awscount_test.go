package awscount

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
)

func TestConditionalFailure(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&smithy.GenericAPIError{Code: "ConditionalCheckFailedException"}, true},
		{fmt.Errorf("commit: %w", &smithy.GenericAPIError{Code: "TransactionCanceledException"}), true},
		{&smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"}, false},
		{errors.New("connection reset"), false},
	}
	for _, tt := range tests {
		if got := conditionalFailure(tt.err); got != tt.want {
			t.Errorf("conditionalFailure(%v) = %t, want %t", tt.err, got, tt.want)
		}
	}
}

func TestSnapshotAndReset(t *testing.T) {
	c := New()
	c.ops["S3.PutObject"] = Op{Requests: 2, BytesSent: 10}
	c.ops["DynamoDB.PutItem"] = Op{Requests: 1, Failed: 1, ConditionalFailed: 1}
	got, keys := c.Snapshot()
	if len(keys) != 2 || keys[0] != "DynamoDB.PutItem" || got["S3.PutObject"].BytesSent != 10 {
		t.Errorf("snapshot %v %v", got, keys)
	}
	got["S3.PutObject"] = Op{}
	if c.Get("S3.PutObject").Requests != 2 {
		t.Error("the snapshot aliases the counter")
	}
	c.Reset()
	if c.Get("S3.PutObject").Requests != 0 {
		t.Error("reset kept counts")
	}
}
