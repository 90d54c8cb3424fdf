// Package e2e holds the client's end-to-end tests against the real HTTP handler
// (pkg/httpapi) on the embedded backend. It is separate from pkg/client so that the
// client's own tests do not depend on the server package compiling (only its runnable
// examples, example_test.go, start a node in-process).
package e2e
