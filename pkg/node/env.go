package node

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stratalog/strata/pkg/awsfault"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/log"
)

// FromEnv reads a node's configuration from getenv (os.Getenv in a function main): the
// settings the stack renders (deploy.Settings, every one of its variables looked up
// once, values trimmed), the AWS endpoint (deploy.Endpoint: AWS_ENDPOINT_URL, else
// STRATA_AWS_ENDPOINT), Lambda's AWS_LAMBDA_MAX_CONCURRENCY and the fault-injection
// testing aid (pkg/awsfault). It leaves Backend to the caller (a function main sets
// BackendAWS, `strata dev` its --backend flag). A value that does not parse or is out
// of range is an error naming the variable.
func FromEnv(getenv func(string) string) (Config, error) {
	s, err := deploy.ParseSettings(getenv)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	endpoint := deploy.Endpoint(getenv)
	concurrency := strings.TrimSpace(getenv(deploy.EnvMaxConcurrency))
	faults, err := awsfault.FromEnv(getenv)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return FromSettings(s, endpoint, concurrency, faults)
}

// FromSettings is FromEnv's typed half: Config from parsed settings, the AWS endpoint,
// the value of AWS_LAMBDA_MAX_CONCURRENCY and an optional fault injector.
func FromSettings(s deploy.Settings, endpoint, maxConcurrency string, faults *awsfault.Injector) (Config, error) {
	cfg := Config{
		AWS: AWSConfig{
			Bucket:       s.Bucket,
			ObjectPrefix: s.ObjectPrefix,
			TablePrefix:  s.TablePrefix,
			Endpoint:     endpoint,
			Bootstrap:    s.Bootstrap,
			Faults:       faults,
		},
		Function: FunctionSettings{
			Subscriptions:     s.Subscriptions,
			SubscriptionsPath: s.SubscriptionsPath,
			Topic:             s.Topic,
			Group:             s.Group,
			BusinessTable:     s.BusinessTable,
			MetricsNamespace:  s.MetricsNamespace,
			RetentionFanout:   s.RetentionFanout,
			CompactFanout:     s.CompactFanout,
			CompactFunction:   s.CompactFunction,
		},
		GroupCommitWindow: groupCommitWindow(s.GroupCommitWindow, maxConcurrency),
		GroupCommitBytes:  s.GroupCommitBudget,
	}
	if cfg.Function.BusinessTable == "" {
		cfg.Function.BusinessTable = deploy.BusinessDefaultTable
	}
	if cfg.Function.MetricsNamespace == "" {
		cfg.Function.MetricsNamespace = deploy.MetricsNamespace
	}
	if s.GroupCommitWindow > deploy.MaxGroupCommitWindow {
		return Config{}, fmt.Errorf("%w: %s=%s: want at most %s", ErrConfig, deploy.EnvGroupCommitWindow, s.GroupCommitWindow, deploy.MaxGroupCommitWindow)
	}
	if s.GroupCommitBudget > deploy.MaxGroupCommitBudget {
		return Config{}, fmt.Errorf("%w: %s=%d: want at most %d", ErrConfig, deploy.EnvGroupCommitBudget, s.GroupCommitBudget, deploy.MaxGroupCommitBudget)
	}
	if s.DefaultPartitions > log.MaxPartitions {
		return Config{}, fmt.Errorf("%w: %s=%d: want 1 to %d", ErrConfig, deploy.EnvDefaultPartitions, s.DefaultPartitions, log.MaxPartitions)
	}
	cfg.Topics = log.TopicDefaults{Partitions: int32(s.DefaultPartitions), Retention: s.DefaultRetention, MaxRetention: s.MaxRetention}
	if err := cfg.Topics.Validate(); err != nil {
		return Config{}, fmt.Errorf("%w: %s, %s, %s: %w", ErrConfig, deploy.EnvDefaultPartitions, deploy.EnvDefaultRetentionMS, deploy.EnvMaxRetentionMS, err)
	}
	grants, err := deploy.ParseGrants(s.Grants)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if s.EveryPrincipalAdmin && len(grants) > 0 {
		return Config{}, fmt.Errorf("%w: %s and %s are both set: grants or every principal an admin, not both",
			ErrConfig, deploy.EnvGrants, deploy.EnvEveryPrincipalAdmin)
	}
	cfg.Function.Grants, cfg.Function.EveryPrincipalAdmin = grants, s.EveryPrincipalAdmin
	return cfg, nil
}

// groupCommitWindow resolves the api function's window: as set (negative: off), else
// deploy.DefaultManagedGroupCommitWindow when Lambda runs many invocations in one
// environment (Managed Instances), else off. On demand an environment serves one request
// at a time, so there is nothing to coalesce.
func groupCommitWindow(set time.Duration, maxConcurrency string) time.Duration {
	if set != 0 {
		return set
	}
	if n, err := strconv.Atoi(maxConcurrency); err == nil && n > 1 {
		return deploy.DefaultManagedGroupCommitWindow
	}
	return -1
}
