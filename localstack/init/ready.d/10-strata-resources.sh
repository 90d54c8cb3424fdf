#!/usr/bin/env bash
# Code generated from pkg/store/dynamo/schema.go by TestInitHookUpToDate; DO NOT EDIT.
# Regenerate: STRATA_UPDATE_HOOK=1 go test ./pkg/store/dynamo -run TestInitHookUpToDate
#
# LocalStack runs the scripts of /etc/localstack/init/ready.d once it is ready; mount
# localstack/init there (see localstack/README.md). This one creates what dynamo.Bootstrap
# creates: the segment bucket and every table, idempotently. Without awslocal it uses the
# AWS CLI against AWS_ENDPOINT_URL (default http://localhost:4566).
set -euo pipefail

prefix="${STRATA_TABLE_PREFIX:-strata-}"
bucket="${STRATA_BUCKET:-strata-segments}"

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

table "${prefix}topics" \
	--attribute-definitions AttributeName=topic,AttributeType=S \
	--key-schema AttributeName=topic,KeyType=HASH
pitr "${prefix}topics"

table "${prefix}sequencer" \
	--attribute-definitions AttributeName=tp,AttributeType=S \
	--key-schema AttributeName=tp,KeyType=HASH \
	--stream-specification StreamEnabled=true,StreamViewType=NEW_IMAGE
pitr "${prefix}sequencer"

table "${prefix}index" \
	--attribute-definitions AttributeName=tp,AttributeType=S AttributeName=base_offset,AttributeType=N \
	--key-schema AttributeName=tp,KeyType=HASH AttributeName=base_offset,KeyType=RANGE
ttl "${prefix}index" ttl
pitr "${prefix}index"

table "${prefix}partitions" \
	--attribute-definitions AttributeName=topic,AttributeType=S AttributeName=partition,AttributeType=N \
	--key-schema AttributeName=topic,KeyType=HASH AttributeName=partition,KeyType=RANGE
pitr "${prefix}partitions"

table "${prefix}assignments" \
	--attribute-definitions AttributeName=gt,AttributeType=S AttributeName=partition,AttributeType=N \
	--key-schema AttributeName=gt,KeyType=HASH AttributeName=partition,KeyType=RANGE
pitr "${prefix}assignments"

table "${prefix}commits" \
	--attribute-definitions AttributeName=gt,AttributeType=S AttributeName=partition,AttributeType=N \
	--key-schema AttributeName=gt,KeyType=HASH AttributeName=partition,KeyType=RANGE
pitr "${prefix}commits"

table "${prefix}groups" \
	--attribute-definitions AttributeName=group,AttributeType=S \
	--key-schema AttributeName=group,KeyType=HASH
pitr "${prefix}groups"

table "${prefix}members" \
	--attribute-definitions AttributeName=group,AttributeType=S AttributeName=member,AttributeType=S \
	--key-schema AttributeName=group,KeyType=HASH AttributeName=member,KeyType=RANGE
ttl "${prefix}members" ttl

table "${prefix}parked" \
	--attribute-definitions AttributeName=gt,AttributeType=S AttributeName=pk,AttributeType=S \
	--key-schema AttributeName=gt,KeyType=HASH AttributeName=pk,KeyType=RANGE
pitr "${prefix}parked"

table "${prefix}idempotency" \
	--attribute-definitions AttributeName=kp,AttributeType=S \
	--key-schema AttributeName=kp,KeyType=HASH
ttl "${prefix}idempotency" ttl
pitr "${prefix}idempotency"

table "${prefix}laghistory" \
	--attribute-definitions AttributeName=group,AttributeType=S \
	--key-schema AttributeName=group,KeyType=HASH

echo "strata: bucket $bucket and tables ${prefix}* ready"
