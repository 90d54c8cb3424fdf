// Package deploy is the one definition of the names a Strata deployment shares between
// its Lambda functions (functions/*) and its infrastructure (infra/): function names,
// environment variables, and the JSON shapes of the configuration the stack hands the
// functions. Table names and schemas live in pkg/store/dynamo/schema.go. It holds names
// and plain data only: no behaviour, no SDK types, so infra can import it cheaply.
package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// Function names: each is the directory under functions/, the asset directory under
// build/functions/, and the construct id of the function in the stack.
const (
	// FunctionAPI serves the HTTP contract (docs/API.md) behind API Gateway.
	FunctionAPI = "api"
	// FunctionDispatch reads the sequencer table's stream (materialising index entries
	// and invoking consumers) and, on a schedule, sweeps for lagging partitions.
	FunctionDispatch = "dispatch"
	// FunctionRetention runs the retention pass on a schedule.
	FunctionRetention = "retention"
	// FunctionConsumer is the example order consumer.
	FunctionConsumer = "consumer"
	// FunctionCompact runs the compaction pass of compacted topics: on a schedule, fanned
	// out per partition, and for one partition when an append finds it dirty.
	FunctionCompact = "compact"
)

// Functions returns every function name, in build order.
func Functions() []string {
	return []string{FunctionAPI, FunctionDispatch, FunctionRetention, FunctionConsumer, FunctionCompact}
}

// Environment variables the functions read and the stack sets: the `env` tags of
// Settings (the typed form), named here for code that names one. pkg/node is their only
// reader (node.FromEnv); `strata dev --backend aws` reads the same names for the same
// settings.
const (
	// EnvBucket names the segment bucket.
	EnvBucket = "STRATA_BUCKET"
	// EnvObjectPrefix is prepended to every segment object key (default none).
	EnvObjectPrefix = "STRATA_OBJECT_PREFIX"
	// EnvTablePrefix is prepended to every table suffix of dynamo.Tables().
	EnvTablePrefix = "STRATA_TABLE_PREFIX"
	// EnvGrants holds the API's grants keyed by principal ARN pattern (JSON, the auth
	// file's grant format); unset or empty means no caller may do anything, unless
	// EnvEveryPrincipalAdmin says otherwise.
	EnvGrants = "STRATA_GRANTS"
	// EnvEveryPrincipalAdmin, "1", makes every principal API Gateway admitted (every IAM
	// identity allowed to invoke the API) an admin that may do everything, deleting
	// topics included. It is the explicit opt-out of authorization and excludes
	// EnvGrants; unset or "0", authorization is EnvGrants' and denies by default.
	EnvEveryPrincipalAdmin = "STRATA_EVERY_PRINCIPAL_ADMIN"
	// EnvSubscriptions holds the dispatch subscriptions (JSON, []Subscription).
	EnvSubscriptions = "STRATA_SUBSCRIPTIONS"
	// EnvSubscriptionsPath is the SSM Parameter Store path under which other CDK apps
	// store the subscriptions they attach (one parameter per topic and group, named by
	// SubscriptionParameterName); dispatch reads them beside EnvSubscriptions. Unset
	// means none.
	EnvSubscriptionsPath = "STRATA_SUBSCRIPTIONS_PATH"
	// EnvTopic and EnvGroup name what a consumer function consumes.
	EnvTopic = "STRATA_TOPIC"
	EnvGroup = "STRATA_GROUP"
	// EnvBusinessTable names the example consumer's business table.
	EnvBusinessTable = "STRATA_BUSINESS_TABLE"
	// EnvMetricsNamespace is the CloudWatch namespace of the functions' EMF metrics.
	EnvMetricsNamespace = "STRATA_METRICS_NAMESPACE"
	// EnvGroupCommitWindow is the api function's group-commit window (a Go duration,
	// "0" for off). Unset, it is DefaultManagedGroupCommitWindow when the function runs
	// many invocations at once (Lambda Managed Instances set EnvMaxConcurrency) and off
	// otherwise: an on-demand execution environment serves one request at a time, so
	// there is nothing to coalesce.
	EnvGroupCommitWindow = "STRATA_GROUP_COMMIT_WINDOW"
	// EnvGroupCommitBudget is the api function's group-commit byte budget
	// (Settings.GroupCommitBudget).
	EnvGroupCommitBudget = "STRATA_GROUP_COMMIT_BUDGET_BYTES"
	// EnvMaxConcurrency is Lambda's own variable for the invocations one execution
	// environment runs at once (Lambda Managed Instances).
	EnvMaxConcurrency = "AWS_LAMBDA_MAX_CONCURRENCY"
	// EnvEndpoint is the SDK's own variable pointing every AWS client at one endpoint
	// (an emulator); S3 is then addressed path-style. Tests and `strata dev` read it.
	EnvEndpoint = "AWS_ENDPOINT_URL"
	// EnvEndpointAlias is the older name of EnvEndpoint the test scripts export; it is
	// read when EnvEndpoint is unset.
	EnvEndpointAlias = "STRATA_AWS_ENDPOINT"
	// EnvEndpointS3 is the SDK's per-service endpoint of S3 (path-style addressing too).
	EnvEndpointS3 = "AWS_ENDPOINT_URL_S3"
)

// Endpoint is the AWS endpoint getenv names: EnvEndpoint, else EnvEndpointAlias,
// trimmed; empty means AWS itself. It is the one place the two names are reconciled, for
// pkg/node and the emulator tests (pkg/store/awstest).
func Endpoint(getenv func(string) string) string {
	if ep := strings.TrimSpace(getenv(EnvEndpoint)); ep != "" {
		return ep
	}
	return strings.TrimSpace(getenv(EnvEndpointAlias))
}

// DefaultManagedGroupCommitWindow is the api function's group-commit window on Lambda
// Managed Instances unless EnvGroupCommitWindow says otherwise.
const DefaultManagedGroupCommitWindow = 5 * time.Millisecond

// MaxGroupCommitWindow is the longest EnvGroupCommitWindow the api function accepts.
const MaxGroupCommitWindow = time.Second

// MaxGroupCommitBudget is the largest EnvGroupCommitBudget the api function accepts
// (log.MaxGroupCommitBytes).
const MaxGroupCommitBudget = 64 << 20

// MetricsNamespace is the default CloudWatch namespace of Strata's metrics.
const MetricsNamespace = "Strata"

// The EMF metrics the stack's alarms read, named here once so that what the functions
// emit (pkg/metrics/emf) and what the alarms read (infra/strata) cannot drift: the
// Prometheus names of pkg/metrics with their "strata_" namespace prefix. Append latency
// is also emitted without dimensions (all topics); the consumer metrics carry
// {group, topic}.
const (
	MetricAppendLatency     = "strata_append_ack_latency_seconds"
	MetricDeadLettered      = "strata_consumer_dead_lettered_total"
	MetricLagSeconds        = "strata_consumer_lag_seconds"
	MetricSecondsToDataLoss = "strata_consumer_seconds_to_data_loss"
	MetricRecordsExpired    = "strata_consumer_records_expired_unread"
	// MetricParkedRecords and MetricReplayedRecords count, per {group, topic}, the
	// records a parking group (on_failure "park") sent to its parking topic and the
	// parked records a release handed to the handler again.
	MetricParkedRecords   = "strata_consumer_parked_records_total"
	MetricReplayedRecords = "strata_consumer_replayed_records_total"
	// MetricParkedLostRecords counts, per {group, topic}, the parked records a release
	// did not find because the parking topic's retention took them first.
	MetricParkedLostRecords = "strata_consumer_parked_lost_records_total"
	// MetricParkedKeys is, per {group, topic}, the keys the group has parked over the
	// topic's partitions, waiting for a release: the dispatch sweep emits it, a
	// subscription's alarm fires when it is not zero.
	MetricParkedKeys = "strata_consumer_parked_keys"
	// MetricDispatchInvokeErrors counts, per {trigger} (stream, schedule), the consumer
	// invocations dispatch could not make; a stream batch counts them instead of failing.
	MetricDispatchInvokeErrors = "strata_dispatch_invoke_errors_total"
	// MetricKafkaRequests, MetricKafkaServerErrors and MetricKafkaRequestDurationMax
	// are the Kafka gateway's requests per {api} (and over every API): how many, how
	// many failed on the gateway's side (kafka.ServerErrorCodes), the slowest.
	MetricKafkaRequests           = "strata_kafka_requests_total"
	MetricKafkaServerErrors       = "strata_kafka_server_errors_total"
	MetricKafkaRequestDurationMax = "strata_kafka_request_duration_seconds_max"
)

// SegmentKeyPrefix is the prefix of every segment object key (before EnvObjectPrefix is
// applied): pkg/segment owns the layout (segment.ObjectKey).
const SegmentKeyPrefix = segment.KeyPrefix

// Subscription binds a consumer function to a topic and group: dispatch invokes Function
// for each partition of Topic where Group has lag and no live lease, as a Lambda event
// source mapping would.
type Subscription struct {
	Topic string `json:"topic"`
	Group string `json:"group"`
	// Function is the consumer function's name or ARN.
	Function string `json:"function"`
}

// ConsumerEvent is the payload dispatch sends a consumer function (asynchronous invoke).
type ConsumerEvent struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Group     string `json:"group"`
}

// Validate reports whether s names a valid topic, group and function.
func (s Subscription) Validate() error {
	switch {
	case !wire.ValidName(s.Topic):
		return fmt.Errorf("deploy: subscription topic %q is not a valid name", s.Topic)
	case !wire.ValidName(s.Group):
		return fmt.Errorf("deploy: subscription group %q is not a valid name", s.Group)
	case strings.TrimSpace(s.Function) == "" || len(s.Function) > 256:
		return errors.New("deploy: subscription function must be a function name or ARN")
	}
	return nil
}

// ParseSubscriptions decodes the value of EnvSubscriptions; empty means none.
func ParseSubscriptions(raw string) ([]Subscription, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var subs []Subscription
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&subs); err != nil {
		return nil, fmt.Errorf("deploy: %s: %w", EnvSubscriptions, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("deploy: %s: trailing data after the list", EnvSubscriptions)
	}
	seen := map[[2]string]bool{}
	for _, s := range subs {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		k := [2]string{s.Topic, s.Group}
		if seen[k] {
			return nil, fmt.Errorf("deploy: %s: topic %q and group %q subscribed twice", EnvSubscriptions, s.Topic, s.Group)
		}
		seen[k] = true
	}
	return subs, nil
}

// EncodeSubscriptions is the inverse of ParseSubscriptions (what the stack sets).
func EncodeSubscriptions(subs []Subscription) (string, error) {
	for _, s := range subs {
		if err := s.Validate(); err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(subs)
	return string(b), err
}

// SubscriptionParameterName is the name of the SSM parameter holding the subscription
// of topic and group under path (EnvSubscriptionsPath): "<path>/<topic>/<group>". The
// name makes a topic and group subscribable once per deployment (a second parameter of
// the same name cannot be created).
func SubscriptionParameterName(path, topic, group string) string {
	return strings.TrimSuffix(path, "/") + "/" + topic + "/" + group
}

// EncodeSubscriptionParameter is the value of s's parameter: s as JSON.
func EncodeSubscriptionParameter(s Subscription) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(s)
	return string(b), err
}

// ParseSubscriptionParameter decodes the parameter name holding value under path: value
// must be one Subscription (no unknown fields) whose topic and group are those its name
// says, so that a parameter cannot claim another subscription's place.
func ParseSubscriptionParameter(path, name, value string) (Subscription, error) {
	var s Subscription
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Subscription{}, fmt.Errorf("deploy: subscription parameter %s: %w", name, err)
	}
	if dec.More() {
		return Subscription{}, fmt.Errorf("deploy: subscription parameter %s: trailing data after the subscription", name)
	}
	if err := s.Validate(); err != nil {
		return Subscription{}, fmt.Errorf("deploy: subscription parameter %s: %w", name, err)
	}
	if want := SubscriptionParameterName(path, s.Topic, s.Group); name != want {
		return Subscription{}, fmt.Errorf("deploy: subscription parameter %s holds topic %q and group %q: its name must be %s", name, s.Topic, s.Group, want)
	}
	return s, nil
}

// Lambda limits the api function enforces (docs/API.md, "Behind API Gateway").
const (
	// MaxLambdaPayload is Lambda's limit on a synchronous invocation's request and
	// response payload (6 MB), the event JSON as a whole.
	MaxLambdaPayload = 6 << 20
	// MaxAPIBody is the largest request body the api function accepts, as the client
	// sent it. API Gateway may hand the body over base64-encoded (4/3 larger) inside the
	// event JSON, so 4 MiB is the largest body that always fits MaxLambdaPayload with
	// room for headers; as base64 records in JSON, that is about 3 MiB of decoded record
	// bytes per append. A larger body is answered 413 payload_too_large.
	MaxAPIBody = 4 << 20
)

// Grant is one entry of EnvGrants: the permissions of the callers whose IAM principal
// ARN (the userArn API Gateway puts in the request context: for a role, the
// assumed-role ARN "arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION") matches Principal.
// Principal is an ARN pattern where * matches any run of characters within one
// "/"-separated part of the ARN (not "/") and ** any run, "/" included: so
// "arn:aws:sts::ACCOUNT:assumed-role/ci-*/*" matches every session of every role
// whose name starts with ci-, and "arn:aws:iam::ACCOUNT:user/*" no user under a path.
// Entries are
// tried in order and the first match decides; a caller no entry matches may do nothing.
// Allow has the auth file's grant format (docs/API.md, "Authorization").
type Grant struct {
	Principal string       `json:"principal"`
	Name      string       `json:"name"`
	Allow     []GrantAllow `json:"allow"`
}

// GrantAllow is one resource ("topic:NAME", "group:NAME", a trailing * as a prefix
// wildcard) and the operations allowed on it.
type GrantAllow struct {
	Resource string   `json:"resource"`
	Ops      []string `json:"ops"`
}

// ParseEveryPrincipalAdmin decodes the value of EnvEveryPrincipalAdmin: "1" is true,
// "" and "0" false, anything else an error (a typo never opens the API).
func ParseEveryPrincipalAdmin(raw string) (bool, error) {
	switch strings.TrimSpace(raw) {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("deploy: %s=%q: want 1 or 0", EnvEveryPrincipalAdmin, raw)
}

// APIAuthorization reads the api function's authorization settings (getenv is
// os.Getenv): the grants, or everyAdmin when EnvEveryPrincipalAdmin opts out of
// authorization. Both set is an error; neither means every caller is refused.
func APIAuthorization(getenv func(string) string) (grants []Grant, everyAdmin bool, err error) {
	if everyAdmin, err = ParseEveryPrincipalAdmin(getenv(EnvEveryPrincipalAdmin)); err != nil {
		return nil, false, err
	}
	if grants, err = ParseGrants(getenv(EnvGrants)); err != nil {
		return nil, false, err
	}
	if everyAdmin && len(grants) > 0 {
		return nil, false, fmt.Errorf("deploy: %s and %s are both set: grants or every principal an admin, not both", EnvGrants, EnvEveryPrincipalAdmin)
	}
	return grants, everyAdmin, nil
}

// ParseGrants decodes the value of EnvGrants; empty means no grants (every caller is
// refused unless EnvEveryPrincipalAdmin is set). It takes the ordered list of Grant, or the short form
// {"<principal pattern>": [<GrantAllow>...], ...}, whose entries are named after their
// pattern and tried most specific first (longest pattern first, then in lexical order).
// It checks the shape; the api function checks resources and operations as the auth
// file's loader does.
func ParseGrants(raw string) ([]Grant, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	var gs []Grant
	if strings.HasPrefix(raw, "{") {
		var byPattern map[string][]GrantAllow
		if err := decodeStrict(raw, &byPattern); err != nil {
			return nil, err
		}
		for pattern, allow := range byPattern {
			gs = append(gs, Grant{Principal: pattern, Name: pattern, Allow: allow})
		}
		sort.Slice(gs, func(i, j int) bool {
			a, b := gs[i].Principal, gs[j].Principal
			if len(a) != len(b) {
				return len(a) > len(b)
			}
			return a < b
		})
	} else if err := decodeStrict(raw, &gs); err != nil {
		return nil, err
	}
	for i, g := range gs {
		switch {
		case strings.TrimSpace(g.Principal) == "" || len(g.Principal) > 2048:
			return nil, fmt.Errorf("deploy: %s: entry %d: principal must be an ARN pattern", EnvGrants, i)
		case strings.TrimSpace(g.Name) == "" || len(g.Name) > 200:
			return nil, fmt.Errorf("deploy: %s: entry %d: name must be 1–200 characters", EnvGrants, i)
		}
	}
	return gs, nil
}

func decodeStrict(raw string, v any) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("deploy: %s: %w", EnvGrants, err)
	}
	if dec.More() {
		return fmt.Errorf("deploy: %s: trailing data after the value", EnvGrants)
	}
	return nil
}

// EncodeGrants is the inverse of ParseGrants (what the stack sets).
func EncodeGrants(gs []Grant) (string, error) {
	b, err := json.Marshal(gs)
	return string(b), err
}

// The example order consumer's business table (functions/consumer): one item per
// handled order event, keyed by BusinessKey "topic/partition/offset", so a replayed
// record's conditional put finds its item and applies nothing twice. On-demand, no
// sort key, no stream.
const (
	// BusinessKey is the table's partition key (a string).
	BusinessKey = "id"
	// BusinessTTLAttribute is the table's TTL attribute: the fenced effect markers'
	// expiry (dynamo.EffectTTLAttribute), so that DynamoDB deletes a record's marker once
	// the record can no longer be redelivered.
	BusinessTTLAttribute = "strata_ttl"
	// BusinessDefaultTable is the table name when EnvBusinessTable is unset.
	BusinessDefaultTable = "strata-orders"
)

// BusinessID is the business table key of the record at (topic, partition, offset).
func BusinessID(topic string, partition int32, offset int64) string {
	return fmt.Sprintf("%s/%d/%d", topic, partition, offset)
}
