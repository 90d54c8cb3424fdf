// Package strata is the AWS CDK construct of one Strata deployment (docs/DESIGN.md):
// the segment bucket, the tables of pkg/store/dynamo's schema, the api, dispatch,
// retention and compaction functions, the HTTP API with IAM authorization, the stream
// event source mapping and schedules of dispatch, retention and compaction, alarms and a
// dashboard. Users import
// it in their own CDK apps, subscribe their own functions to a topic and group with
// Subscribe (as aws-lambda-event-sources does for native sources) and give principals
// produce and consume rights with GrantProduce and GrantConsume.
package strata

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// Props configures one Strata deployment. The zero value of every field but AssetDir
// means its documented default.
type Props struct {
	// AssetDir holds each function's Lambda asset as <AssetDir>/<name>/bootstrap, the
	// layout scripts/build-functions.sh writes to build/functions. Required.
	AssetDir string
	// TablePrefix is prepended to every table suffix (STRATA_TABLE_PREFIX). Default: the
	// stack name and "-", so two deployments in one account never share a table.
	TablePrefix string
	// ObjectPrefix is prepended to every segment object key (STRATA_OBJECT_PREFIX).
	ObjectPrefix string
	// SubscriptionsPath is the SSM Parameter Store path where other CDK apps attach
	// their subscriptions (Attach, Attached.Subscribe) and dispatch reads them
	// (STRATA_SUBSCRIPTIONS_PATH). Default: "/strata/<table prefix>subscriptions".
	SubscriptionsPath string

	// DefaultPartitions and DefaultRetention are what the api gives a topic created
	// without them. Defaults: 4 and 24 hours (docs/API.md).
	DefaultPartitions int
	DefaultRetention  time.Duration
	// MaxRetention is the longest retention a topic may ask for, its retention pin cap
	// included: the api refuses more, and the bucket's lifecycle rule expires segment
	// objects a day after it, as the backstop of the retention function. Default: 7 days.
	MaxRetention time.Duration

	// APIGrants is the api's per-topic and per-group grants keyed by principal ARN
	// pattern (STRATA_GRANTS, JSON in the auth file's grant format). Default none: the
	// API refuses every call unless EveryPrincipalAdmin is set (GrantProduce and
	// GrantConsume confine principals to routes of their topics and groups; the grants
	// say what they may do there).
	APIGrants string
	// EveryPrincipalAdmin makes every IAM principal allowed to invoke the API an admin
	// that may do everything, deleting topics included (STRATA_EVERY_PRINCIPAL_ADMIN=1).
	// Without it and without APIGrants the API refuses every call: authorization denies
	// by default. It excludes APIGrants, and a FrontDoor with a function URL (which has
	// no routes to confine GrantProduce's and GrantConsume's principals by).
	EveryPrincipalAdmin bool

	// Memory sizes in MiB. Defaults: api 1024 (2048 on managed instances), dispatch
	// 256, retention 256, compact 1024 (a partition's pass holds the records it reads
	// from the log start in memory).
	APIMemoryMiB, DispatchMemoryMiB, RetentionMemoryMiB, CompactMemoryMiB int

	// SweepInterval schedules dispatch's sweep for lagging partitions a stream batch
	// missed (default 1 minute); RetentionInterval the retention pass (default 5
	// minutes); CompactInterval the compaction function's scheduled pass, fanned out
	// per partition of each compacted topic (default 5 minutes).
	SweepInterval, RetentionInterval, CompactInterval time.Duration

	// Stream event source mapping of dispatch on the sequencer table's stream. Defaults:
	// batch size 100, 5 retries, records older than 1 hour go to the failure queue.
	StreamBatchSize    int
	StreamRetries      int
	StreamMaxRecordAge time.Duration
	// ConsumerBatchingWindow is the stream mapping's MaximumBatchingWindowInSeconds
	// (strata:consumerBatchingWindowSeconds), whole seconds from 0 to 300: dispatch
	// gathers a window of commits and invokes each subscribed consumer at most once per
	// partition per window, as the Kinesis mapping polls a shard once a second. It adds
	// up to the window to a consumer's delivery and divides its invocations and polls at
	// a high commit rate. Default 0: dispatch runs for every stream batch (up to four a
	// second per shard), the fastest delivery.
	ConsumerBatchingWindow time.Duration

	// Alarms: the thresholds (see Alarms for what each watches). Defaults: lag 300 s,
	// 1 dead-lettered record, 1 function error, 1 throttle, append p99 1 s.
	Alarms AlarmThresholds
	// AlarmActions are added to every alarm (e.g. an SNS topic action). Default none.
	AlarmActions []awscloudwatch.IAlarmAction

	// RemovalPolicy applies to the bucket and the tables. Default RETAIN: deleting the
	// stack keeps the data (infra/README.md, "Removal").
	RemovalPolicy awscdk.RemovalPolicy
	// LogRetention of every function's log group. Default two weeks.
	LogRetention awslogs.RetentionDays

	// ManagedInstances, when set, runs the api function on Lambda Managed Instances
	// (a capacity provider in its own VPC) instead of on-demand. Default: on-demand.
	ManagedInstances *ManagedInstances
	// GroupCommitWindow and GroupCommitBudget set the api function's group commit
	// (STRATA_GROUP_COMMIT_WINDOW, STRATA_GROUP_COMMIT_BUDGET_BYTES): concurrent appends
	// within the window share one segment object, cut early when their records reach the
	// budget. Zero means the function's defaults (a 5 ms window on managed instances,
	// off on demand; the log's byte cap); a negative window turns group commit off.
	GroupCommitWindow time.Duration
	GroupCommitBudget int

	// KafkaGateway, when set, deploys the Kafka-protocol gateway on ECS Fargate behind
	// a Network Load Balancer (see KafkaGateway). Default none.
	KafkaGateway *KafkaGateway

	// FrontDoor is how callers reach the api function: FrontDoorAPIGateway (default),
	// FrontDoorFunctionURL or FrontDoorBoth. With a function URL, every principal
	// pattern of APIGrants must name its account (the URL's resource policy grants it).
	FrontDoor FrontDoor

	// SystemLogLevel is the level of the records Lambda itself writes to every Strata
	// function's log stream: SystemLogLevelWarn (default) sends only warnings (a failed
	// or timed-out invocation's runtimeDone and report records, failed inits, dropped
	// logs), SystemLogLevelInfo adds the start and report records of every invocation
	// (their duration, billed duration and max memory; the Duration metric has the
	// first without them), SystemLogLevelDebug everything. The functions' own log
	// lines and EMF documents are unaffected.
	SystemLogLevel SystemLogLevel
}

// SystemLogLevel is a Lambda system log level (Props.SystemLogLevel).
type SystemLogLevel string

// The system log levels Lambda accepts, least detail first.
const (
	SystemLogLevelWarn  SystemLogLevel = "WARN"
	SystemLogLevelInfo  SystemLogLevel = "INFO"
	SystemLogLevelDebug SystemLogLevel = "DEBUG"
)

// SystemLogLevels are the valid Props.SystemLogLevel values.
var SystemLogLevels = []SystemLogLevel{SystemLogLevelWarn, SystemLogLevelInfo, SystemLogLevelDebug}

// AlarmThresholds are the alarms' thresholds; zero means the default.
type AlarmThresholds struct {
	// LagSeconds: the age of a subscribed group's oldest unread record.
	LagSeconds float64
	// DeadLettered: records a subscribed group dead-lettered (or dropped) in 5 minutes.
	DeadLettered float64
	// FunctionErrors and Throttles: per function, in 5 minutes.
	FunctionErrors, Throttles float64
	// AppendLatencyP99: the 99th percentile of append acknowledgement latency.
	AppendLatencyP99 time.Duration
	// TimeToDataLoss: a subscribed group's alarm fires when its oldest unread record
	// expires sooner than this (default 1h).
	TimeToDataLoss time.Duration
	// StreamIteratorAge: the dispatch function's sequencer stream iterator age, the
	// wait of commits not yet indexed (default 5m).
	StreamIteratorAge time.Duration
	// ParkedKeys: a subscribed group's alarm fires when it has parked at least this
	// many keys on the topic (default 1: any key parked).
	ParkedKeys float64
	// GatewayServerErrors: Kafka requests the gateway failed on its side in 5 minutes,
	// over every API (default 1; with KafkaGateway).
	GatewayServerErrors float64
}

// Strata is one deployment. Its fields are for reading (dashboards, outputs, further
// grants); change the deployment through Props, Subscribe and the Grant methods.
type Strata struct {
	constructs.Construct

	// Bucket holds the segment objects.
	Bucket awss3.Bucket
	// Tables maps each table suffix of dynamo.Tables() to its table.
	Tables map[string]awsdynamodb.Table
	// Functions maps each of api, dispatch, retention and compact to its function.
	Functions map[string]awslambda.Function
	// API is the HTTP API (IAM authorization) in front of the api function; nil with
	// FrontDoorFunctionURL.
	API awsapigatewayv2.HttpApi
	// FunctionURL is the api function's URL (AuthType AWS_IAM); nil with
	// FrontDoorAPIGateway.
	FunctionURL awslambda.FunctionUrl
	// StreamFailures receives the descriptions of stream batches dispatch failed on
	// after its retries (the event source mapping's on-failure destination).
	StreamFailures awssqs.Queue
	// Dashboard shows lag, dead letters, errors, throttles and append latency.
	Dashboard awscloudwatch.Dashboard
	// Alarms lists every alarm, in creation order.
	Alarms []awscloudwatch.Alarm
	// Managed is the capacity provider of the api function and its VPC; nil on demand.
	Managed *ManagedAPI
	// Gateway is the Kafka gateway's service, load balancer and role; nil without
	// Props.KafkaGateway.
	Gateway *Gateway

	props         Props
	tablePrefix   string
	subsPath      string
	subscriptions []deploy.Subscription
	subscribed    map[[2]string]bool
	granted       map[string]int // subscriptions per function (node path)
	urlPrincipals []awsiam.IPrincipal
}

// New creates a Strata deployment in scope. Invalid props are an error; nothing is
// added to scope then.
func New(scope constructs.Construct, id string, props Props) (*Strata, error) {
	p, err := props.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Strata{
		Tables:     map[string]awsdynamodb.Table{},
		Functions:  map[string]awslambda.Function{},
		props:      p,
		subscribed: map[[2]string]bool{},
		granted:    map[string]int{},
	}
	constructs.NewConstruct_Override(s, scope, jsii.String(id))
	s.tablePrefix = p.TablePrefix
	if s.tablePrefix == "" {
		s.tablePrefix = *awscdk.Stack_Of(scope).StackName() + "-"
	}
	s.subsPath = p.SubscriptionsPath
	if s.subsPath == "" {
		s.subsPath = "/strata/" + s.tablePrefix + "subscriptions"
	}
	s.newBucket()
	s.newTables()
	for _, name := range ownFunctions {
		s.Functions[name] = s.newFunction(name, p.memory(name))
	}
	if p.FrontDoor.apiGateway() {
		s.newAPI()
	}
	if p.FrontDoor.functionURL() {
		s.urlPrincipals, _, _ = urlPrincipals(p.APIGrants) // checked by withDefaults
		s.newFunctionURL()
	}
	s.newDispatchSources()
	s.newRetentionSchedule()
	s.newCompactSchedule()
	if p.ManagedInstances != nil {
		s.newCapacityProvider(*p.ManagedInstances)
	}
	s.newObservability()
	if p.KafkaGateway != nil {
		s.newKafkaGateway(*p.KafkaGateway)
	}
	return s, nil
}

func (p Props) withDefaults() (Props, error) {
	var errs []error
	if p.AssetDir == "" {
		errs = append(errs, errors.New("strata: Props.AssetDir is required (the directory scripts/build-functions.sh writes)"))
	}
	def := func(v *int, d int, name string, lo, hi int) {
		if *v == 0 {
			*v = d
		}
		if *v < lo || *v > hi {
			errs = append(errs, fmt.Errorf("strata: Props.%s = %d, want %d to %d", name, *v, lo, hi))
		}
	}
	defDur := func(v *time.Duration, d time.Duration, name string, lo time.Duration) {
		if *v == 0 {
			*v = d
		}
		if *v < lo {
			errs = append(errs, fmt.Errorf("strata: Props.%s = %v, want at least %v", name, *v, lo))
		}
	}
	if p.ManagedInstances != nil && p.APIMemoryMiB == 0 {
		p.APIMemoryMiB = 2048 // the smallest function on managed instances
	}
	def(&p.DefaultPartitions, 4, "DefaultPartitions", 1, 1024)
	def(&p.APIMemoryMiB, 1024, "APIMemoryMiB", 128, 10240)
	def(&p.DispatchMemoryMiB, 256, "DispatchMemoryMiB", 128, 10240)
	def(&p.RetentionMemoryMiB, 256, "RetentionMemoryMiB", 128, 10240)
	def(&p.CompactMemoryMiB, 1024, "CompactMemoryMiB", 128, 10240)
	def(&p.StreamBatchSize, 100, "StreamBatchSize", 1, 10000)
	if p.StreamRetries == 0 {
		p.StreamRetries = 5
	}
	if w := p.ConsumerBatchingWindow; w < 0 || w > MaxConsumerBatchingWindow || w%time.Second != 0 {
		errs = append(errs, fmt.Errorf("strata: Props.ConsumerBatchingWindow = %v, want whole seconds from 0 to %v", w, MaxConsumerBatchingWindow))
	}
	if p.StreamRetries < 0 || p.StreamRetries > 10000 {
		errs = append(errs, fmt.Errorf("strata: Props.StreamRetries = %d, want 0 to 10000", p.StreamRetries))
	}
	defDur(&p.DefaultRetention, 24*time.Hour, "DefaultRetention", time.Second)
	defDur(&p.MaxRetention, 7*24*time.Hour, "MaxRetention", time.Second)
	defDur(&p.SweepInterval, time.Minute, "SweepInterval", time.Minute)
	defDur(&p.RetentionInterval, 5*time.Minute, "RetentionInterval", time.Minute)
	defDur(&p.CompactInterval, 5*time.Minute, "CompactInterval", time.Minute)
	defDur(&p.StreamMaxRecordAge, time.Hour, "StreamMaxRecordAge", time.Minute)
	if p.StreamMaxRecordAge > 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("strata: Props.StreamMaxRecordAge = %v, want at most 7 days", p.StreamMaxRecordAge))
	}
	if p.DefaultRetention > p.MaxRetention {
		errs = append(errs, fmt.Errorf("strata: Props.DefaultRetention %v exceeds MaxRetention %v", p.DefaultRetention, p.MaxRetention))
	}
	for _, iv := range []time.Duration{p.SweepInterval, p.RetentionInterval, p.CompactInterval} {
		if iv%time.Minute != 0 {
			errs = append(errs, fmt.Errorf("strata: schedule interval %v is not a whole number of minutes", iv))
		}
	}
	a := &p.Alarms
	for _, t := range []struct {
		v *float64
		d float64
	}{{&a.LagSeconds, defaultLagSeconds}, {&a.DeadLettered, defaultDeadLettered}, {&a.FunctionErrors, 1}, {&a.Throttles, 1}, {&a.ParkedKeys, defaultParkedKeys}, {&a.GatewayServerErrors, 1}} {
		if *t.v == 0 {
			*t.v = t.d
		}
		if *t.v < 0 {
			errs = append(errs, fmt.Errorf("strata: alarm threshold %v is negative", *t.v))
		}
	}
	defDur(&a.AppendLatencyP99, time.Second, "Alarms.AppendLatencyP99", time.Millisecond)
	defDur(&a.TimeToDataLoss, defaultTimeToDataLoss, "Alarms.TimeToDataLoss", time.Second)
	defDur(&a.StreamIteratorAge, defaultStreamIteratorAge, "Alarms.StreamIteratorAge", time.Millisecond)
	if !tablePrefixRE.MatchString(p.TablePrefix) {
		errs = append(errs, fmt.Errorf("strata: Props.TablePrefix %q: want at most 200 of A-Z a-z 0-9 _ . -", p.TablePrefix))
	}
	if strings.ContainsAny(p.ObjectPrefix, "*?") || len(p.ObjectPrefix) > 512 {
		errs = append(errs, fmt.Errorf("strata: Props.ObjectPrefix %q: no * or ? (they would widen the IAM grants), at most 512 bytes", p.ObjectPrefix))
	}
	if p.APIGrants != "" && p.EveryPrincipalAdmin {
		errs = append(errs, errors.New("strata: Props.APIGrants and Props.EveryPrincipalAdmin exclude each other"))
	}
	if p.SubscriptionsPath != "" && !validParameterPath(p.SubscriptionsPath) {
		errs = append(errs, fmt.Errorf("strata: Props.SubscriptionsPath %q: want an absolute Parameter Store path of A-Z a-z 0-9 _ . - levels, at most 600 bytes, not under /aws or /ssm", p.SubscriptionsPath))
	}
	if p.APIGrants != "" && !json.Valid([]byte(p.APIGrants)) {
		errs = append(errs, errors.New("strata: Props.APIGrants is not valid JSON"))
	}
	if p.FrontDoor == "" {
		p.FrontDoor = FrontDoorAPIGateway
	}
	if p.SystemLogLevel == "" {
		p.SystemLogLevel = SystemLogLevelWarn
	}
	if !slices.Contains(SystemLogLevels, p.SystemLogLevel) {
		errs = append(errs, fmt.Errorf("strata: Props.SystemLogLevel %q: want one of %q", p.SystemLogLevel, SystemLogLevels))
	}
	if !slices.Contains(FrontDoors, p.FrontDoor) {
		errs = append(errs, fmt.Errorf("strata: Props.FrontDoor %q: want one of %q", p.FrontDoor, FrontDoors))
	} else if p.FrontDoor.functionURL() && p.EveryPrincipalAdmin {
		// The URL has no routes to confine a caller by: every principal a GrantProduce
		// or GrantConsume lets call it would be an admin of the whole API.
		errs = append(errs, fmt.Errorf("strata: Props.EveryPrincipalAdmin and Props.FrontDoor %q exclude each other: a function URL has no routes, so every principal allowed to call it (GrantProduce, GrantConsume) would be an admin; use APIGrants, or FrontDoorAPIGateway", p.FrontDoor))
	} else if p.FrontDoor.functionURL() && p.APIGrants != "" && json.Valid([]byte(p.APIGrants)) {
		if _, _, err := urlPrincipals(p.APIGrants); err != nil {
			errs = append(errs, err)
		}
	}
	if p.GroupCommitBudget < 0 || p.GroupCommitBudget > deploy.MaxGroupCommitBudget {
		errs = append(errs, fmt.Errorf("strata: Props.GroupCommitBudget = %d, want 0 to %d", p.GroupCommitBudget, deploy.MaxGroupCommitBudget))
	}
	if p.GroupCommitWindow > deploy.MaxGroupCommitWindow {
		errs = append(errs, fmt.Errorf("strata: Props.GroupCommitWindow = %v, want at most %v", p.GroupCommitWindow, deploy.MaxGroupCommitWindow))
	}
	if p.RemovalPolicy == "" {
		p.RemovalPolicy = awscdk.RemovalPolicy_RETAIN
	}
	if p.LogRetention == "" {
		p.LogRetention = awslogs.RetentionDays_TWO_WEEKS
	}
	if m := p.ManagedInstances; m != nil {
		window := p.GroupCommitWindow
		if window == 0 {
			window = deploy.DefaultManagedGroupCommitWindow
		}
		if err := m.withDefaults(window, p.APIMemoryMiB); err != nil {
			errs = append(errs, err)
		}
	}
	if k := p.KafkaGateway; k != nil {
		kc := *k // the caller's value stays as given
		if err := kc.withDefaults(); err != nil {
			errs = append(errs, err)
		}
		p.KafkaGateway = &kc
	}
	return p, errors.Join(errs...)
}

// Default alarm thresholds of a subscription (AlarmThresholds), also those of an
// attached deployment's subscriptions.
const (
	defaultLagSeconds        = 300
	defaultDeadLettered      = 1
	defaultTimeToDataLoss    = time.Hour
	defaultStreamIteratorAge = 5 * time.Minute
	defaultParkedKeys        = 1
)

// tablePrefixRE is what DynamoDB allows in table names, short enough for any suffix.
var tablePrefixRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{0,200}$`)

// parameterPathRE is a Parameter Store path whose parameters "<path>/<topic>/<group>"
// stay within the 1011-byte name limit for any topic and group.
var parameterPathRE = regexp.MustCompile(`^(/[A-Za-z0-9_.-]+)+$`)

func validParameterPath(path string) bool {
	lower := strings.ToLower(path)
	return len(path) <= 600 && parameterPathRE.MatchString(path) &&
		!strings.HasPrefix(lower, "/aws") && !strings.HasPrefix(lower, "/ssm")
}

func (p Props) memory(name string) int {
	switch name {
	case deploy.FunctionAPI:
		return p.APIMemoryMiB
	case deploy.FunctionDispatch:
		return p.DispatchMemoryMiB
	case deploy.FunctionCompact:
		return p.CompactMemoryMiB
	default:
		return p.RetentionMemoryMiB
	}
}

// TableName is the full name of the table with the given suffix.
func (s *Strata) TableName(suffix string) string { return s.tablePrefix + suffix }

// TablePrefix is the deployment's STRATA_TABLE_PREFIX.
func (s *Strata) TablePrefix() string { return s.tablePrefix }

// SystemLogLevel is the system log level the stack's functions run at (Props.SystemLogLevel
// with its default applied), for a function the app adds beside them.
func (s *Strata) SystemLogLevel() SystemLogLevel { return s.props.SystemLogLevel }

// SubscriptionsPath is the Parameter Store path of subscriptions attached by other apps
// (STRATA_SUBSCRIPTIONS_PATH).
func (s *Strata) SubscriptionsPath() string { return s.subsPath }

// Subscriptions returns the subscriptions made so far (what STRATA_SUBSCRIPTIONS holds).
func (s *Strata) Subscriptions() []deploy.Subscription { return slices.Clone(s.subscriptions) }

// segmentPrefix is the key prefix of every segment object.
func (s *Strata) segmentPrefix() string { return s.props.ObjectPrefix + deploy.SegmentKeyPrefix }

func (s *Strata) newBucket() {
	s.Bucket = awss3.NewBucket(s, jsii.String("Segments"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     s.props.RemovalPolicy,
		LifecycleRules: &[]*awss3.LifecycleRule{
			{
				// Only the objects of topics that delete by time carry the tag (store.Expiry):
				// a compact-only topic's objects, compaction rewrites of them and garbage
				// markers are never the backstop's.
				Id:         jsii.String("retention-backstop"),
				Prefix:     jsii.String(s.segmentPrefix()),
				TagFilters: &map[string]any{store.ExpiryTagKey: store.ExpiryTagValue},
				Expiration: awscdk.Duration_Days(jsii.Number(backstopDays(s.props.MaxRetention))),
			},
			{
				Id:                                  jsii.String("abort-incomplete-uploads"),
				AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
			},
		},
	})
}

// backstopDays is the age in whole days after which the lifecycle rule expires a segment
// object: the longest retention rounded up, plus a day of grace for the retention
// function, which deletes objects itself first.
func backstopDays(maxRetention time.Duration) float64 {
	day := 24 * time.Hour
	return float64((maxRetention+day-1)/day + 1)
}

func (s *Strata) newTables() {
	for _, ts := range dynamo.Tables() {
		tp := &awsdynamodb.TableProps{
			TableName:    jsii.String(s.TableName(ts.Suffix)),
			PartitionKey: attribute(ts.PartitionKey),
			BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
			PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
				PointInTimeRecoveryEnabled: jsii.Bool(ts.PointInTimeRecovery),
			},
			RemovalPolicy: s.props.RemovalPolicy,
		}
		if ts.SortKey.Name != "" {
			tp.SortKey = attribute(ts.SortKey)
		}
		if ts.TTLAttribute != "" {
			tp.TimeToLiveAttribute = jsii.String(ts.TTLAttribute)
		}
		if ts.Stream != "" {
			tp.Stream = awsdynamodb.StreamViewType(ts.Stream)
		}
		s.Tables[ts.Suffix] = awsdynamodb.NewTable(s, jsii.String("Table-"+ts.Suffix), tp)
	}
}

func attribute(k dynamo.KeyAttr) *awsdynamodb.Attribute {
	t := awsdynamodb.AttributeType_STRING
	if k.Type == dynamo.Number {
		t = awsdynamodb.AttributeType_NUMBER
	}
	return &awsdynamodb.Attribute{Name: jsii.String(k.Name), Type: t}
}

// settings are the settings every function that reaches the stores gets (the bucket's
// name is a token, resolved at deploy time).
func (s *Strata) settings() deploy.Settings {
	return deploy.Settings{
		Bucket:           *s.Bucket.BucketName(),
		TablePrefix:      s.tablePrefix,
		ObjectPrefix:     s.props.ObjectPrefix,
		MetricsNamespace: deploy.MetricsNamespace,
	}
}

// apiSettings are the api function's settings: the stores' and the topic defaults, and
// with api its authorization and group commit (the Kafka gateway takes the first part:
// it has flags of its own for group commit, and no grants yet).
func (s *Strata) apiSettings(api bool) deploy.Settings {
	st := s.settings()
	st.DefaultPartitions = s.props.DefaultPartitions
	st.DefaultRetention = s.props.DefaultRetention
	st.MaxRetention = s.props.MaxRetention
	if api {
		st.Grants = s.props.APIGrants
		st.EveryPrincipalAdmin = s.props.EveryPrincipalAdmin
		st.GroupCommitWindow = s.props.GroupCommitWindow
		st.GroupCommitBudget = s.props.GroupCommitBudget
	}
	return st
}

// environment renders settings as a function's environment: the one definition the
// functions parse back (pkg/node), so the stack never sets a variable no code reads.
func environment(st deploy.Settings) map[string]*string {
	vars, err := st.Env()
	if err != nil {
		panic(fmt.Sprintf("strata: render settings: %v", err)) // subscriptions are validated when made
	}
	env := make(map[string]*string, len(vars))
	for k, v := range vars {
		env[k] = jsii.String(v)
	}
	return env
}

// newFunction creates one of Strata's own functions with its own role, which gets only
// its log group's write rights and the rights tableStatements lists for it.
func (s *Strata) newFunction(name string, memory int) awslambda.Function {
	scope := constructs.NewConstruct(s, jsii.String("Fn-"+name))
	logs := awslogs.NewLogGroup(scope, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention:     s.props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(scope, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Strata " + name + " function: least privilege"),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("OwnLogs"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	for _, st := range s.tableStatements(name) {
		role.AddToPrincipalPolicy(st)
	}
	st := s.settings()
	if name == deploy.FunctionAPI {
		st = s.apiSettings(true)
	}
	if name == deploy.FunctionDispatch {
		st.SubscriptionsPath = s.subsPath
	}
	if name == deploy.FunctionRetention {
		st.RetentionFanout = true // its role may invoke the function itself
	}
	if name == deploy.FunctionCompact {
		st.CompactFanout = true // its role may invoke the function itself
	}
	env := environment(st)
	if name == deploy.FunctionDispatch {
		env[deploy.EnvSubscriptions] = jsii.String("[]") // Subscribe fills it in
	}
	timeout := 30 * time.Second
	switch name {
	case deploy.FunctionDispatch:
		timeout = time.Minute
	case deploy.FunctionRetention, deploy.FunctionCompact:
		timeout = 5 * time.Minute
	}
	return awslambda.NewFunction(scope, jsii.String("Function"), &awslambda.FunctionProps{
		Description:   jsii.String("Strata " + name),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(s.props.AssetDir, name)), nil),
		MemorySize:    jsii.Number(float64(memory)),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(timeout.Seconds())),
		Role:          role,
		LogGroup:      logs,
		Environment:   &env,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		// Lambda's own records filtered by level (JSON format only); the functions'
		// lines keep the default application level.
		SystemLogLevelV2: awslambda.SystemLogLevel(s.props.SystemLogLevel),
	})
}

// tableStatements are the DynamoDB and S3 statements of Strata's own function name.
func (s *Strata) tableStatements(name string) []awsiam.PolicyStatement {
	var out []awsiam.PolicyStatement
	access := TableAccess()[name]
	for _, ts := range dynamo.Tables() { // schema order: stable templates
		a, ok := access[ts.Suffix]
		if !ok {
			continue
		}
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("Table" + sidPart(ts.Suffix)),
			Actions:   jsii.Strings(a.actions()...),
			Resources: &[]*string{s.Tables[ts.Suffix].TableArn()},
		}))
	}
	objects := s.Bucket.ArnForObjects(jsii.String(s.segmentPrefix() + "*"))
	// Without s3:ListBucket, S3 answers a GET of a missing key 403 instead of 404, and a
	// read racing retention would be an internal error, not "not found"; every function
	// that reads or deletes segment objects has it, on the segment prefix only.
	list := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("SegmentsList"),
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: &[]*string{s.Bucket.BucketArn()},
		Conditions: &map[string]any{
			"StringLike": map[string]any{"s3:prefix": []string{s.segmentPrefix() + "*"}},
		},
	})
	switch name {
	case deploy.FunctionAPI:
		out = append(out,
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("SegmentsReadWrite"),
				Actions:   jsii.Strings(slices.Concat(objectRead, objectWrite, objectTag)...),
				Resources: &[]*string{objects},
			}),
			list)
	case deploy.FunctionDispatch:
		// The subscriptions other apps attach (Attach): GetParametersByPath on the path
		// covers every parameter below it, and nothing else.
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("AttachedSubscriptions"),
			Actions:   jsii.Strings("ssm:GetParametersByPath"),
			Resources: &[]*string{parameterArn(s, s.subsPath)},
		}),
			// Materialising a commit of idempotent members whose appender stopped reads
			// the batch object's members table to make their claims.
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("SegmentsRead"),
				Actions:   jsii.Strings(objectRead...),
				Resources: &[]*string{objects},
			}),
			list)
	case deploy.FunctionRetention:
		// Retention deletes expired objects.
		out = append(out,
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("SegmentsDelete"),
				Actions:   jsii.Strings(objectDelete...),
				Resources: &[]*string{objects},
			}),
			list)
	case deploy.FunctionCompact:
		// The compaction pass reads a compacted partition's objects, writes its
		// rewrites (tagged when the topic deletes by time) and garbage markers, deletes
		// what they replaced, and retags the objects of a topic altered to compact so
		// the lifecycle backstop leaves them.
		out = append(out,
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("SegmentsReadWriteDelete"),
				Actions:   jsii.Strings(slices.Concat(objectRead, objectWrite, objectTag, objectDelete)...),
				Resources: &[]*string{objects},
			}),
			list)
	}
	return out
}

// parameterArn is the ARN of the Parameter Store path (or parameter) in scope's stack's
// account and region.
func parameterArn(scope constructs.Construct, path string) *string {
	return awscdk.Stack_Of(scope).FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("ssm"),
		Resource:     jsii.String("parameter"),
		ResourceName: jsii.String(strings.TrimPrefix(path, "/")),
		ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

// sidPart makes a table suffix usable in a statement id (alphanumeric).
func sidPart(suffix string) string {
	b := []byte(suffix)
	if len(b) > 0 && b[0] >= 'a' && b[0] <= 'z' {
		b[0] -= 'a' - 'A'
	}
	return string(b)
}

// apiRoutes are the routes of docs/API.md, in its order.
var apiRoutes = []struct {
	method awsapigatewayv2.HttpMethod
	path   string
}{
	{awsapigatewayv2.HttpMethod_POST, "/v1/topics"},
	{awsapigatewayv2.HttpMethod_GET, "/v1/topics"},
	{awsapigatewayv2.HttpMethod_GET, "/v1/topics/{topic}"},
	{awsapigatewayv2.HttpMethod_POST, "/v1/topics/{topic}/records"},
	{awsapigatewayv2.HttpMethod_GET, "/v1/topics/{topic}/partitions/{partition}/records"},
	{awsapigatewayv2.HttpMethod_POST, "/v1/groups/{group}/topics/{topic}/partitions/{partition}/lease"},
	{awsapigatewayv2.HttpMethod_DELETE, "/v1/groups/{group}/topics/{topic}/partitions/{partition}/lease"},
	{awsapigatewayv2.HttpMethod_POST, "/v1/groups/{group}/topics/{topic}/partitions/{partition}/commit"},
	{awsapigatewayv2.HttpMethod_GET, "/v1/groups/{group}"},
	{awsapigatewayv2.HttpMethod_POST, "/v1/groups/{group}/topics/{topic}/reset"},
}

// newAPI creates the HTTP API: every route of docs/API.md with IAM authorization, the
// health check without, and an IAM-authorized $default route so that an unknown path or
// method gets the contract's own 404/405 from the api function.
func (s *Strata) newAPI() {
	fn := s.Functions[deploy.FunctionAPI]
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Api"), fn,
		&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
			PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
		})
	s.API = awsapigatewayv2.NewHttpApi(s, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("Strata HTTP API (docs/API.md), IAM authorization"),
		DefaultIntegration: integration,
		DefaultAuthorizer:  awsapigatewayv2authorizers.NewHttpIamAuthorizer(),
	})
	for _, r := range apiRoutes {
		s.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.method},
			Integration: integration,
		})
	}
	s.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String("/v1/health"),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET},
		Integration: integration,
		Authorizer:  awsapigatewayv2.NewHttpNoneAuthorizer(),
	})
}

// MaxConsumerBatchingWindow is the longest batching window Lambda takes on a stream
// mapping (MaximumBatchingWindowInSeconds).
const MaxConsumerBatchingWindow = 300 * time.Second

// newDispatchSources attaches dispatch to the sequencer table's stream (every commit,
// in order per partition) and to the sweep schedule.
func (s *Strata) newDispatchSources() {
	fn := s.Functions[deploy.FunctionDispatch]
	s.StreamFailures = awssqs.NewQueue(s, jsii.String("StreamFailures"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	fn.AddEventSource(awslambdaeventsources.NewDynamoEventSource(s.Tables[dynamo.SequencerTable],
		&awslambdaeventsources.DynamoEventSourceProps{
			StartingPosition:      awslambda.StartingPosition_TRIM_HORIZON,
			BatchSize:             jsii.Number(float64(s.props.StreamBatchSize)),
			MaxBatchingWindow:     awscdk.Duration_Seconds(jsii.Number(s.props.ConsumerBatchingWindow.Seconds())),
			BisectBatchOnError:    jsii.Bool(true),
			RetryAttempts:         jsii.Number(float64(s.props.StreamRetries)),
			MaxRecordAge:          awscdk.Duration_Seconds(jsii.Number(s.props.StreamMaxRecordAge.Seconds())),
			ParallelizationFactor: jsii.Number(1),
			OnFailure:             awslambdaeventsources.NewSqsDlq(s.StreamFailures),
		}))
	schedule(s, "Sweep", fn, s.props.SweepInterval, "dispatch sweep: re-dispatch lagging partitions a stream batch missed")
}

func (s *Strata) newRetentionSchedule() {
	fn := s.Functions[deploy.FunctionRetention]
	schedule(s, "RetentionSchedule", fn, s.props.RetentionInterval, "retention pass")
	// The scheduled pass fans out per topic, invoking the function itself once per topic
	// (functions/retention). The right is a policy of its own: in the role's default
	// policy, which the function depends on, the function's ARN would be a cycle.
	awsiam.NewPolicy(fn, jsii.String("FanOut"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{fn.Role()},
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("RetentionFanOut"),
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: &[]*string{fn.FunctionArn()},
		})},
	})
}

// newCompactSchedule schedules the compaction function's pass, which fans out per
// partition of each compacted topic by invoking the function itself, and lets the api
// function's dirty-ratio trigger invoke it for a partition an append found dirty.
func (s *Strata) newCompactSchedule() {
	fn := s.Functions[deploy.FunctionCompact]
	schedule(s, "CompactSchedule", fn, s.props.CompactInterval, "compaction pass of compacted topics")
	api := s.Functions[deploy.FunctionAPI]
	api.AddEnvironment(jsii.String(deploy.EnvCompactFunction), fn.FunctionName(), nil)
	awsiam.NewPolicy(api, jsii.String("CompactTrigger"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{api.Role()},
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("CompactTrigger"),
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: &[]*string{fn.FunctionArn()},
		})},
	})
	// A policy of its own, as retention's: in the role's default policy the function's
	// ARN would be a cycle.
	awsiam.NewPolicy(fn, jsii.String("FanOut"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{fn.Role()},
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("CompactFanOut"),
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: &[]*string{fn.FunctionArn()},
		})},
	})
}

// ownFunctions are Strata's own functions, in creation order (the example consumer is
// a subscriber: stack/, not this construct).
var ownFunctions = []string{deploy.FunctionAPI, deploy.FunctionDispatch, deploy.FunctionRetention, deploy.FunctionCompact}

// schedule invokes fn every interval with EventBridge's scheduled event.
func schedule(scope constructs.Construct, id string, fn awslambda.IFunction, interval time.Duration, what string) {
	awsevents.NewRule(scope, jsii.String(id), &awsevents.RuleProps{
		Description: jsii.String("Strata " + what),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(interval.Minutes()))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(0), // the next tick does the same work
		})},
	})
}
