package kafkaref

import (
	"context"
	"errors"
	"os"
	"testing"
)

// Require skips t when java, javac or mvn is missing, or fails it when EnvRequire is 1.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s=1 but %v", EnvRequire, err)
		}
		t.Skipf("skipping: %v (set %s=1 to make this a failure)", err, EnvRequire)
	}
}

// ClasspathT is Classpath for a test (Require first; a failure to resolve fails t).
func ClasspathT(t testing.TB) string {
	t.Helper()
	Require(t)
	cp, err := Classpath(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// StartBrokerT starts a broker in a temp dir for t and stops it when t ends.
func StartBrokerT(t testing.TB, props map[string]string) *Broker {
	t.Helper()
	Require(t)
	b, err := StartBroker(context.Background(), BrokerOptions{Dir: t.TempDir(), Properties: props})
	if errors.Is(err, ErrMissing) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}
