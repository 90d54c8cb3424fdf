package awscount

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
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
	c.ops["DynamoDB.Query"] = Op{Requests: 3, Failed: 2}
	if n := c.Answered("DynamoDB.PutItem", "DynamoDB.Query", "S3.PutObject"); n != 4 {
		t.Errorf("answered %d, want 4: a failed condition counts, a retried error does not", n)
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

// TestTableOf: a single-table input is tallied by its table; a multi-table or tableless
// input by its operation only.
func TestTableOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params any
		want   string
	}{
		{"GetItem", &dynamodb.GetItemInput{TableName: aws.String("Strata-topics")}, "Strata-topics"},
		{"Query", &dynamodb.QueryInput{TableName: aws.String("Strata-index")}, "Strata-index"},
		{"no name", &dynamodb.GetItemInput{}, ""},
		{"transaction", &dynamodb.TransactWriteItemsInput{}, ""},
		{"S3", &s3.PutObjectInput{Bucket: aws.String("b")}, ""},
		{"nil pointer", (*dynamodb.GetItemInput)(nil), ""},
		{"nil", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tableOf(tc.params); got != tc.want {
				t.Errorf("tableOf = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCountsByTable: requests through a client with the middleware are tallied by
// operation and, for single-table ones, by table too.
func TestCountsByTable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := New()
	ddb := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), APIOptions: []func(*middleware.Stack) error{c.Middleware}})
	ctx := context.Background()
	key := map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "x"}}
	for _, table := range []string{"topics", "topics", "index"} {
		if _, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	put := types.TransactWriteItem{Put: &types.Put{TableName: aws.String("topics"), Item: key}}
	if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op, table string
		want      int64
	}{{"DynamoDB.GetItem", "topics", 2}, {"DynamoDB.GetItem", "index", 1}, {"DynamoDB.GetItem", "other", 0}, {"DynamoDB.TransactWriteItems", "", 0}} {
		if got := c.Table(tc.op, tc.table).Requests; got != tc.want {
			t.Errorf("%s on %q: %d requests, want %d", tc.op, tc.table, got, tc.want)
		}
	}
	if got := c.Get("DynamoDB.GetItem").Requests; got != 3 {
		t.Errorf("GetItem: %d requests, want 3", got)
	}
	if got := c.Get("DynamoDB.TransactWriteItems").Requests; got != 1 {
		t.Errorf("TransactWriteItems: %d requests, want 1", got)
	}
	c.Reset()
	if got := c.Table("DynamoDB.GetItem", "topics").Requests; got != 0 {
		t.Errorf("reset kept %d requests by table", got)
	}
}
