package deploy_test

import (
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/deploy"
)

func TestGroupCommitWindow(t *testing.T) {
	for _, c := range []struct {
		window, concurrency string
		want                time.Duration
		err                 bool
	}{
		{"", "", -1, false},
		{"", "1", -1, false},
		{"", "32", deploy.DefaultManagedGroupCommitWindow, false},
		{"", "many", -1, false},
		{"10ms", "", 10 * time.Millisecond, false},
		{"0", "32", -1, false},
		{"-1ms", "", 0, true},
		{"2s", "", 0, true},
		{"soon", "", 0, true},
	} {
		env := map[string]string{deploy.EnvGroupCommitWindow: c.window, deploy.EnvMaxConcurrency: c.concurrency}
		got, err := deploy.GroupCommitWindow(func(k string) string { return env[k] })
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("window %q concurrency %q: %v, %v; want %v (error %v)", c.window, c.concurrency, got, err, c.want, c.err)
		}
	}
}
