// Package e2e runs the built function bootstraps (scripts/build-functions.sh, for the
// host architecture) under the AWS Lambda Runtime Interface Emulator against the AWS
// emulator, invoking them over the emulator's HTTP endpoint with real event payloads:
// the api function serves API Gateway v2 requests, dispatch reads the sequencer table's
// stream records, the consumer and retention functions run as Lambda would run them.
// Dispatch's asynchronous invocations go to a Lambda Invoke endpoint the test serves on
// 127.0.0.1 (AWS_ENDPOINT_URL_LAMBDA), which runs each on the consumer's emulator.
package e2e
