// Package params is dispatch's Source of the subscriptions other CDK apps attach
// (docs/DESIGN.md §4, "Subscriptions from other apps"): one SSM parameter per topic and
// group under the deployment's path (deploy.EnvSubscriptionsPath), read with
// GetParametersByPath and kept for a TTL, so that dispatch reads Parameter Store about
// once a minute, not once per stream batch.
package params

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/stratalog/strata/pkg/deploy"
)

// API is the one SSM call the Source makes; *ssm.Client has it.
type API interface {
	GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, opts ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error)
}

// Defaults of Config.
const (
	// DefaultTTL is how long a list read is served before it is read again: a new
	// subscription is dispatched within it (and the next sweep).
	DefaultTTL = time.Minute
	// DefaultRetry is how long after a failed read the next one is tried.
	DefaultRetry = 10 * time.Second
	// DefaultMaxParameters bounds one read: the standard tier's parameters per account
	// and region. Beyond it the first MaxParameters are served, with an error.
	DefaultMaxParameters = 10000
	// DefaultPageSize is GetParametersByPath's MaxResults, the largest it allows.
	DefaultPageSize = 10
)

// Config configures a Source. Client and Path are required.
type Config struct {
	Client API
	// Path is the deployment's subscriptions path, e.g. "/strata/Strata-/subscriptions".
	Path string
	// TTL and Retry: see DefaultTTL and DefaultRetry (used when zero).
	TTL, Retry time.Duration
	// MaxParameters and PageSize: see DefaultMaxParameters and DefaultPageSize (used
	// when zero).
	MaxParameters, PageSize int
	// Clock returns the current time (time.Now when nil).
	Clock func() time.Time
}

// Source is a dispatch.Source over Parameter Store; it is safe for concurrent use.
type Source struct {
	cfg Config

	mu   sync.Mutex
	subs []deploy.Subscription
	next time.Time // when to read again
}

// New checks cfg.
func New(cfg Config) (*Source, error) {
	if cfg.Client == nil {
		return nil, errors.New("params: Client is required")
	}
	cfg.Path = strings.TrimSuffix(cfg.Path, "/")
	if !strings.HasPrefix(cfg.Path, "/") || len(cfg.Path) < 2 {
		return nil, fmt.Errorf("params: path %q: want an absolute Parameter Store path such as /strata/Strata-/subscriptions", cfg.Path)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.MaxParameters <= 0 {
		cfg.MaxParameters = DefaultMaxParameters
	}
	if cfg.PageSize <= 0 || cfg.PageSize > DefaultPageSize {
		cfg.PageSize = DefaultPageSize
	}
	return &Source{cfg: cfg}, nil
}

// Subscriptions returns the attached subscriptions, read again when the TTL has passed.
// A read's problems (a failed call, a malformed parameter, which is skipped, more than
// MaxParameters, of which the first are served) are returned by the call that read, with
// what is known: the parameters that decoded, or after a failed call the previous list.
// Calls before the next read return the list alone.
func (s *Source) Subscriptions(ctx context.Context) ([]deploy.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock()
	if now.Before(s.next) {
		return s.subs, nil
	}
	ps, over, err := s.read(ctx)
	if err != nil {
		s.next = now.Add(s.cfg.Retry)
		return s.subs, err
	}
	subs, problems := Decode(s.cfg.Path, ps)
	if over {
		problems = append(problems, fmt.Errorf("params: more than %d parameters under %s: the first %d served, the rest skipped", s.cfg.MaxParameters, s.cfg.Path, s.cfg.MaxParameters))
	}
	s.subs, s.next = subs, now.Add(s.cfg.TTL)
	return subs, errors.Join(problems...)
}

// read lists the parameters under the path, every page of them up to MaxParameters
// (over: there were more).
func (s *Source) read(ctx context.Context) (ps []types.Parameter, over bool, err error) {
	pages := ssm.NewGetParametersByPathPaginator(s.cfg.Client, &ssm.GetParametersByPathInput{
		Path:       aws.String(s.cfg.Path),
		Recursive:  aws.Bool(true),
		MaxResults: aws.Int32(int32(s.cfg.PageSize)),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("params: read %s: %w", s.cfg.Path, err)
		}
		ps = append(ps, page.Parameters...)
		if len(ps) > s.cfg.MaxParameters {
			return ps[:s.cfg.MaxParameters], true, nil
		}
	}
	return ps, false, nil
}

// Decode turns the parameters read under path into subscriptions, in name order as
// Parameter Store lists them; each parameter that is not a subscription of its own name
// (deploy.ParseSubscriptionParameter) is skipped with an error saying why.
func Decode(path string, ps []types.Parameter) ([]deploy.Subscription, []error) {
	var subs []deploy.Subscription
	var problems []error
	for _, p := range ps {
		name, value := aws.ToString(p.Name), aws.ToString(p.Value)
		if p.Type != types.ParameterTypeString {
			problems = append(problems, fmt.Errorf("params: %s is a %s parameter, want String: skipped", name, p.Type))
			continue
		}
		sub, err := deploy.ParseSubscriptionParameter(path, name, value)
		if err != nil {
			problems = append(problems, fmt.Errorf("params: skipped: %w", err))
			continue
		}
		subs = append(subs, sub)
	}
	return subs, problems
}
