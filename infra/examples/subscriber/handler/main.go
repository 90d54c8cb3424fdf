// Command handler is the subscriber's function: pkg/lambdaconsumer leases the
// partition dispatch names, hands each order to bill, and commits; a record bill
// refuses past the group's attempts goes to the dead-letter topic. Build it with
// GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o build/bootstrap ./handler
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/lambdaconsumer"
)

func main() {
	lambda.Start(lambdaconsumer.Handler(lambdaconsumer.Config{Workers: 4, OrderedKeys: true}, bill))
}

// bill handles one order event; an error retries it. Its side effect must be
// idempotent on (topic, partition, offset): a record is handled again after a crash
// before its commit.
func bill(ctx context.Context, r lambdaconsumer.Record) error {
	var order struct {
		ID     string  `json:"id"`
		Amount float64 `json:"amount"`
	}
	if err := json.Unmarshal(r.Value, &order); err != nil {
		return fmt.Errorf("order %s/%d@%d is not JSON: %w", r.Topic, r.Partition, r.Offset, err)
	}
	slog.InfoContext(ctx, "billed", "order", order.ID, "amount", order.Amount, "offset", r.Offset)
	return nil
}
