// Package apigwtest is a test stand-in for the API Gateway HTTP API in front of the api
// function: an http.Handler that checks each request's SigV4 signature (service
// execute-api) against known test credentials as API Gateway's IAM authorization does,
// answers 403 with API Gateway's JSON body when the signature is missing, unknown,
// expired or does not match (a tampered body, header, path or query), and forwards an
// accepted request as a payload format 2.0 event (events.APIGatewayV2HTTPRequest, with
// requestContext.authorizer.iam filled as API Gateway fills it, binary bodies base64) to
// an Invoker: the api handler in process (InProcess) or a function under the Lambda
// Runtime Interface Emulator (RIE). The function's answer is mapped back to HTTP.
// Routes (Config.Routes) are matched as API Gateway matches them, each IAM-authorized or
// public, with an Authorize hook for the caller's execute-api:Invoke rights. The limits
// hold as on AWS (Config.Service "lambda" makes it a Lambda function URL with IAM
// auth instead: signatures for the service lambda, one $default route, the same event): a body over 10 MB or an event over Lambda's 6 MB is a 413 without an
// invocation, a failed invocation or an answer over 6 MB a 500.
//
// The signature is recomputed with aws-sdk-go-v2's v4 signer over the headers the
// caller signed and the SHA-256 of the body actually received. That signer signs every
// header it is given except Authorization, User-Agent, X-Amzn-Trace-Id, Expect and
// Transfer-Encoding, so a request whose SignedHeaders name one of those is refused here
// although API Gateway would accept it; the SDK, the CLI and awscurl never sign them.
package apigwtest
