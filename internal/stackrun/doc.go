// Package stackrun runs the synthesized Strata stack on this machine from its template
// (issue 17 item 7): it synthesizes the infra module's CDK app, creates the template's
// tables and buckets on the AWS emulator under local physical names, starts each
// function's bootstrap from the cloud assembly under the Lambda Runtime Interface
// Emulator with exactly the environment the template gives it (references resolved),
// runs the stream event source mappings with their batch, bisect and retry settings
// from the emulator's DynamoDB Streams, the schedules as timed invocations on a
// compressed clock, the functions' asynchronous Lambda invocations, and the HTTP API
// behind a SigV4-checking API Gateway front with the routes' IAM authorization. Every
// AWS request a function makes goes through its own proxy, which checks it against the
// function's role statements in the template and answers AccessDenied, reported, when
// they do not allow it.
package stackrun
