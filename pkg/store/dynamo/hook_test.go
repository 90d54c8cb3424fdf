package dynamo_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/store/dynamo"
)

// hookPath is the LocalStack init hook generated from the schema.
const hookPath = "../../../localstack/init/ready.d/10-strata-resources.sh"

// renderInitHook writes the LocalStack init hook that creates, with the AWS CLI, the
// bucket and tables Bootstrap creates, from the same Tables() definition.
func renderInitHook() string {
	def := dynamo.DefaultConfig()
	var b strings.Builder
	fmt.Fprintf(&b, `#!/usr/bin/env bash
# Code generated from pkg/store/dynamo/schema.go by TestInitHookUpToDate; DO NOT EDIT.
# Regenerate: STRATA_UPDATE_HOOK=1 go test ./pkg/store/dynamo -run TestInitHookUpToDate
#
# LocalStack runs the scripts of /etc/localstack/init/ready.d once it is ready; mount
# localstack/init there (see localstack/README.md). This one creates what dynamo.Bootstrap
# creates: the segment bucket and every table, idempotently. Without awslocal it uses the
# AWS CLI against AWS_ENDPOINT_URL (default http://localhost:4566).
set -euo pipefail

prefix="${STRATA_TABLE_PREFIX:-%s}"
bucket="${STRATA_BUCKET:-%s}"

awsl() {
	if command -v awslocal >/dev/null 2>&1; then
		awslocal "$@"
	else
		aws --endpoint-url "${AWS_ENDPOINT_URL:-http://localhost:4566}" "$@"
	fi
}

awsl s3api head-bucket --bucket "$bucket" >/dev/null 2>&1 || awsl s3api create-bucket --bucket "$bucket" >/dev/null

# table NAME then create-table arguments: create unless it exists, wait until ACTIVE.
table() {
	local name="$1"
	shift
	awsl dynamodb describe-table --table-name "$name" >/dev/null 2>&1 ||
		awsl dynamodb create-table --table-name "$name" --billing-mode PAY_PER_REQUEST "$@" >/dev/null
	awsl dynamodb wait table-exists --table-name "$name"
}

# ttl NAME ATTRIBUTE: enable TTL unless it already is (DynamoDB refuses to enable it twice).
ttl() {
	local status
	status="$(awsl dynamodb describe-time-to-live --table-name "$1" --query TimeToLiveDescription.TimeToLiveStatus --output text)"
	[ "$status" = ENABLED ] || [ "$status" = ENABLING ] ||
		awsl dynamodb update-time-to-live --table-name "$1" --time-to-live-specification "Enabled=true,AttributeName=$2" >/dev/null
}

pitr() {
	awsl dynamodb update-continuous-backups --table-name "$1" \
		--point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null
}
`, def.TablePrefix, def.Bucket)
	for _, ts := range dynamo.Tables() {
		keys := []dynamo.KeyAttr{ts.PartitionKey}
		if ts.SortKey.Name != "" {
			keys = append(keys, ts.SortKey)
		}
		var defs, schema []string
		for i, k := range keys {
			kind := "HASH"
			if i == 1 {
				kind = "RANGE"
			}
			defs = append(defs, fmt.Sprintf("AttributeName=%s,AttributeType=%s", k.Name, k.Type))
			schema = append(schema, fmt.Sprintf("AttributeName=%s,KeyType=%s", k.Name, kind))
		}
		fmt.Fprintf(&b, "\ntable \"${prefix}%s\" \\\n\t--attribute-definitions %s \\\n\t--key-schema %s",
			ts.Suffix, strings.Join(defs, " "), strings.Join(schema, " "))
		if ts.Stream != "" {
			fmt.Fprintf(&b, " \\\n\t--stream-specification StreamEnabled=true,StreamViewType=%s", ts.Stream)
		}
		b.WriteString("\n")
		if ts.TTLAttribute != "" {
			fmt.Fprintf(&b, "ttl \"${prefix}%s\" %s\n", ts.Suffix, ts.TTLAttribute)
		}
		if ts.PointInTimeRecovery {
			fmt.Fprintf(&b, "pitr \"${prefix}%s\"\n", ts.Suffix)
		}
	}
	b.WriteString("\necho \"strata: bucket $bucket and tables ${prefix}* ready\"\n")
	return b.String()
}

// TestInitHookUpToDate keeps the LocalStack init hook in step with Tables(): the schema
// is defined once, in Go, and the shell script is generated from it.
func TestInitHookUpToDate(t *testing.T) {
	want := renderInitHook()
	if os.Getenv("STRATA_UPDATE_HOOK") == "1" {
		if err := os.MkdirAll(filepath.Dir(hookPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hookPath, []byte(want), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(hookPath)
	if err != nil {
		t.Fatalf("read the init hook: %v (generate it with STRATA_UPDATE_HOOK=1)", err)
	}
	if string(got) != want {
		t.Fatalf("%s is out of date with schema.go; regenerate it with STRATA_UPDATE_HOOK=1 go test ./pkg/store/dynamo -run TestInitHookUpToDate", hookPath)
	}
	info, err := os.Stat(hookPath)
	if err != nil || info.Mode()&0o111 == 0 {
		t.Fatalf("%s must be executable (%v)", hookPath, err)
	}
}
