package httpapi_test

import (
	"fmt"
	"testing"
)

// TestCleanupPolicySpellings: a create or an alter takes cleanup_policy only as the
// contract's enum spells it; an empty or spaced list is 400 and creates nothing.
func TestCleanupPolicySpellings(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	for i, c := range []struct {
		policy string
		code   int
	}{
		{"delete", 201}, {"compact", 201}, {"compact,delete", 201}, {"delete,compact", 201},
		{"", 400}, {" compact", 400}, {"compact, delete", 400}, {"compact,", 400}, {"kompact", 400},
	} {
		t.Run(c.policy, func(t *testing.T) {
			name := fmt.Sprintf("p%d", i)
			if c.code == 201 {
				e.call("POST", "/v1/topics", map[string]any{"name": name + "ok", "partitions": 1, "cleanup_policy": c.policy}).want(t, 201)
				return
			}
			e.call("POST", "/v1/topics", map[string]any{"name": "bad", "partitions": 1, "cleanup_policy": c.policy}).want(t, 400, "invalid_request")
			e.call("GET", "/v1/topics/bad", nil).want(t, 404, "not_found")
			e.call("PATCH", "/v1/topics/t", map[string]any{"cleanup_policy": c.policy}).want(t, 400, "invalid_request")
		})
	}
}
