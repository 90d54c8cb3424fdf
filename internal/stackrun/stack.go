package stackrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/internal/lambdarun"
	"github.com/stratalog/strata/pkg/store/awstest"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// Options configures a run of the stack.
type Options struct {
	// Context is CDK context for the synthesis ("strata:<setting>" keys), beside the
	// harness's own (the stack name, the asset directory).
	Context map[string]string
	// Minute is how long a schedule's minute lasts here: schedules run on a compressed
	// clock (rate(5 minutes) fires every 5 × Minute). Default 2 s.
	Minute time.Duration
	// Instances is how many execution environments each on-demand function may run at
	// once (each an emulator process). Default 2. A function on Lambda Managed
	// Instances runs its template's MinExecutionEnvironments, each taking its
	// PerExecutionEnvironmentMaxConcurrency invocations at once.
	Instances int
	// Callers are the principals that may call the HTTP API: their signatures verify,
	// and each route's IAM authorization checks execute-api:Invoke against their
	// statements, in whose resources "{api}" stands for the API's execute-api ARN
	// prefix (arn:aws:execute-api:region:account:api-id) and "{function}" for the ARN
	// of the function behind the function URL (lambda:InvokeFunctionUrl).
	Callers []Caller
}

// Caller is a principal outside the stack (a user, another account's role) and its
// identity policy.
type Caller struct {
	Principal  apigwtest.Principal
	Statements []Statement
	// Role, when set, is the logical id (or its prefix, before CDK's hash) of a role
	// in the template whose statements the caller also has: a principal that assumed
	// it, with exactly the rights the stack grants it (e.g. GrantConsume's).
	Role string
}

// Stack is the synthesized stack running on this machine.
type Stack struct {
	t testing.TB
	// Name is the stack's name (unique per run: every physical name derives from it).
	Name string
	// Template is the synthesized template, its resources named locally.
	Template *Template
	// Functions by logical id.
	Functions map[string]*Function
	// Gateways are the ECS task definitions' containers by "<logical id>/<container>".
	Gateways map[string]*Gateway
	// APIURL is the HTTP API's endpoint (the front).
	APIURL string
	// Front is the API Gateway stand-in; nil when the template has no HTTP API.
	Front *apigwtest.Front
	// FunctionURL is the api function's URL (the URL front), "" when the template has
	// none; URLFront checks its SigV4 signatures (service lambda) and IAM rights.
	FunctionURL string
	URLFront    *apigwtest.Front

	emulator *url.URL
	ddb      *dynamodb.Client
	s3c      *s3.Client
	byName   map[string]*Function
	lambda   *lambdaService
	mappings map[string]*streamMapping
	rules    map[string]*schedule
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu     sync.Mutex
	routes map[string][2]int // HTTP API route → invocations answered, failed
	// arrivals are the start times of each route's answered invocations.
	arrivals map[string][]time.Time
	denials  []Denial
	// failures are what the mappings gave up on (described to their failure destination).
	failures []string
}

// Start synthesizes the stack, creates its tables and buckets on the emulator
// (STRATA_AWS_ENDPOINT; a missing emulator fails t when STRATA_REQUIRE_EMULATOR=1),
// starts every function's bootstrap from the cloud assembly under the Runtime Interface
// Emulator with the template's environment and its own IAM-checking proxy, the stream
// event source mappings, the schedules and the HTTP API front. Everything stops and is
// deleted when t ends.
func Start(t testing.TB, opts Options) *Stack {
	t.Helper()
	ep := awstest.Endpoint(t)
	if ep == "" {
		return nil
	}
	if opts.Minute == 0 {
		opts.Minute = 2 * time.Second
	}
	if opts.Instances == 0 {
		opts.Instances = 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	emu, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{t: t, Name: "Sr" + randomID(), Functions: map[string]*Function{}, Gateways: map[string]*Gateway{}, byName: map[string]*Function{},
		mappings: map[string]*streamMapping{}, rules: map[string]*schedule{}, emulator: emu, cancel: cancel}
	t.Cleanup(s.stop)
	b := lambdarun.Built(t)
	c := map[string]string{"strata:assetDir": b.Functions, "strata:requireAssets": "true"}
	for k, v := range opts.Context {
		c[k] = v
	}
	out := t.TempDir()
	path, err := Synthesize(ctx, b.Root, out, s.Name, c)
	if err != nil {
		t.Fatal(err)
	}
	if s.Template, err = ReadTemplate(path, s.Name); err != nil {
		t.Fatal(err)
	}
	t.Logf("stackrun: synthesized %s (%d resources) with context %v", path, len(s.Template.Resources), c)
	s.ddb = awstest.DynamoDBClient(ctx, t)
	s.s3c = awstest.S3Client(ctx, t)
	if err := s.createStorage(ctx); err != nil {
		t.Fatal(err)
	}
	s.lambda = &lambdaService{functions: s.byName, ctx: ctx}
	if err := s.startFunctions(ctx, out, b, opts.Instances); err != nil {
		t.Fatal(err)
	}
	if err := s.startGateways(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := s.startMappings(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.startSchedules(ctx, opts.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.roleCallers(opts.Callers); err != nil {
		t.Fatal(err)
	}
	if len(s.Template.OfType("AWS::ApiGatewayV2::Api")) > 0 {
		if err := s.startAPI(opts.Callers); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.startFunctionURL(opts.Callers); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-registered first: stop the pollers, schedules and invocations
	// before the emulator processes (registered above) are killed under them.
	t.Cleanup(s.quiet)
	return s
}

// roleCallers adds to each caller with a Role that role's statements in the template.
func (s *Stack) roleCallers(callers []Caller) error {
	for i := range callers {
		c := &callers[i]
		if c.Role == "" {
			continue
		}
		var found []string
		for _, id := range s.Template.OfType("AWS::IAM::Role") {
			if strings.HasPrefix(id, c.Role) {
				found = append(found, id)
			}
		}
		if len(found) != 1 {
			return fmt.Errorf("stackrun: caller %s: roles %v match %q, want one", c.Principal.ARN, found, c.Role)
		}
		sts, err := s.Template.RoleStatements(found[0])
		if err != nil {
			return fmt.Errorf("stackrun: caller %s: %w", c.Principal.ARN, err)
		}
		c.Statements = append(append([]Statement(nil), c.Statements...), sts...)
	}
	return nil
}

// quiet stops the stream mappings and schedules and waits for every invocation.
func (s *Stack) quiet() {
	s.cancel()
	s.wg.Wait()
	if s.lambda != nil {
		s.lambda.wg.Wait()
	}
}

func (s *Stack) stop() {
	s.quiet()
	for _, f := range s.Functions {
		if f.Proxy != nil {
			f.Proxy.Close()
		}
		if s.t.Failed() {
			s.t.Logf("%s", f.Logs())
		}
	}
	if s.Template == nil || s.ddb == nil {
		return
	}
	ctx := context.Background()
	for _, id := range s.Template.OfType("AWS::DynamoDB::Table") {
		_, _ = s.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(s.Template.Name(id))})
	}
	for _, id := range s.Template.OfType("AWS::S3::Bucket") {
		if err := s3store.DeleteBucket(ctx, s.s3c, s.Template.Name(id)); err != nil {
			s.t.Logf("stackrun: delete bucket %s: %v", s.Template.Name(id), err)
		}
	}
}

// reportDenial records a denial and logs it (once per distinct denial: a retried
// request repeats it).
func (s *Stack) reportDenial(d Denial) {
	s.mu.Lock()
	first := true
	for _, o := range s.denials {
		if o.String() == d.String() {
			first = false
			break
		}
	}
	s.denials = append(s.denials, d)
	s.mu.Unlock()
	if first {
		s.t.Logf("IAM DENIED %s", d)
	}
}

// countRoute tallies one invocation of the HTTP API's route key, started at start.
func (s *Stack) countRoute(key string, start time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.routes == nil {
		s.routes = map[string][2]int{}
		s.arrivals = map[string][]time.Time{}
	}
	c := s.routes[key]
	if ok {
		c[0]++
		s.arrivals[key] = append(s.arrivals[key], start)
	} else {
		c[1]++
	}
	s.routes[key] = c
}

// RouteArrivals returns the start times of the route key's answered invocations
// since ResetRoutes, in the order they ended.
func (s *Stack) RouteArrivals(key string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals[key]...)
}

// RouteInvocations returns, by HTTP API route key, the invocations the function
// answered and those that failed (the invocation itself: an emulator timing out
// under load, not an error answer of the function's).
func (s *Stack) RouteInvocations() map[string][2]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][2]int, len(s.routes))
	for k, v := range s.routes {
		out[k] = v
	}
	return out
}

// ResetRoutes forgets the route tallies.
func (s *Stack) ResetRoutes() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes, s.arrivals = nil, nil
}

// Denials returns every AWS request a function's role did not allow so far.
func (s *Stack) Denials() []Denial {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Denial(nil), s.denials...)
}

// DistinctDenials groups denials by what was denied: "<denial> (×n)", in first-seen
// order.
func DistinctDenials(ds []Denial) []string {
	var order []string
	n := map[string]int{}
	for _, d := range ds {
		k := d.String()
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = fmt.Sprintf("%s (×%d)", k, n[k])
	}
	return out
}

// StreamFailures returns the batches the stream mappings gave up on.
func (s *Stack) StreamFailures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.failures...)
}

// AsyncResults returns the asynchronous invocations (Lambda Invoke with InvocationType
// Event) finished so far.
func (s *Stack) AsyncResults() []AsyncResult { return s.lambda.Results() }

// Function returns the function whose template description is desc.
func (s *Stack) Function(desc string) *Function {
	for _, f := range s.Functions {
		if f.Description == desc {
			return f
		}
	}
	s.t.Fatalf("stackrun: no function described %q", desc)
	return nil
}

// cfnTable is the part of AWS::DynamoDB::Table's properties the harness creates.
type cfnTable struct {
	TableName               string
	AttributeDefinitions    []struct{ AttributeName, AttributeType string }
	KeySchema               []struct{ AttributeName, KeyType string }
	StreamSpecification     *struct{ StreamViewType string }
	TimeToLiveSpecification *struct {
		AttributeName string
		Enabled       bool
	}
	GlobalSecondaryIndexes []json.RawMessage
	LocalSecondaryIndexes  []json.RawMessage
}

func (s *Stack) createStorage(ctx context.Context) error {
	for _, id := range s.Template.OfType("AWS::DynamoDB::Table") {
		raw, _ := json.Marshal(s.Template.Resources[id].Properties)
		var p cfnTable
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("stackrun: table %s: %w", id, err)
		}
		if len(p.GlobalSecondaryIndexes)+len(p.LocalSecondaryIndexes) > 0 {
			return fmt.Errorf("stackrun: table %s: secondary indexes are not created by the harness yet", id)
		}
		name := s.Template.Name(id)
		in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: "PAY_PER_REQUEST"}
		for _, a := range p.AttributeDefinitions {
			in.AttributeDefinitions = append(in.AttributeDefinitions, ddbAttr(a.AttributeName, a.AttributeType))
		}
		for _, k := range p.KeySchema {
			in.KeySchema = append(in.KeySchema, ddbKey(k.AttributeName, k.KeyType))
		}
		if p.StreamSpecification != nil {
			in.StreamSpecification = ddbStream(p.StreamSpecification.StreamViewType)
		}
		// The name holds the stack's random id, so a table of that name already there is
		// this harness's own: an attempt the SDK retried after losing its answer (a loaded
		// emulator), as pkg/store/dynamo's Bootstrap takes it.
		var inUse *ddbtypes.ResourceInUseException
		if _, err := s.ddb.CreateTable(ctx, in); err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("stackrun: create table %s (%s): %w", name, id, err)
		}
		if tl := p.TimeToLiveSpecification; tl != nil && tl.Enabled {
			if _, err := s.ddb.UpdateTimeToLive(ctx, ddbTTL(name, tl.AttributeName)); err != nil {
				return fmt.Errorf("stackrun: table %s TTL: %w", name, err)
			}
		}
		if p.StreamSpecification != nil {
			d, err := s.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			if err != nil || d.Table.LatestStreamArn == nil {
				return fmt.Errorf("stackrun: table %s has no stream (%v)", name, err)
			}
			s.Template.SetAttr(id, "StreamArn", *d.Table.LatestStreamArn)
		}
	}
	for _, id := range s.Template.OfType("AWS::S3::Bucket") {
		name := s.Template.Name(id)
		if err := s3store.CreateBucket(ctx, s.s3c, name); err != nil {
			return fmt.Errorf("stackrun: create bucket %s (%s): %w", name, id, err)
		}
		if lc, ok := s.Template.Resources[id].Properties["LifecycleConfiguration"]; ok {
			if err := s.putLifecycle(ctx, name, lc); err != nil {
				return err
			}
		}
	}
	return nil
}

// functionProps is the part of AWS::Lambda::Function's properties the harness runs.
type functionProps struct {
	Code          map[string]any
	Description   string
	MemorySize    float64
	Timeout       float64
	Handler       string
	Role          any
	Environment   struct{ Variables map[string]any }
	LoggingConfig struct{ LogFormat, SystemLogLevel string }
	Runtime       string
	// CapacityProviderConfig puts the function on Lambda Managed Instances.
	CapacityProviderConfig struct {
		LambdaManagedInstancesCapacityProviderConfig struct {
			PerExecutionEnvironmentMaxConcurrency float64
		}
	}
	FunctionScalingConfig struct{ MinExecutionEnvironments, MaxExecutionEnvironments float64 }
}

func (s *Stack) startFunctions(ctx context.Context, out string, b lambdarun.Build, instances int) error {
	retries := map[string]int{} // function logical id → EventInvokeConfig retries
	for _, id := range s.Template.OfType("AWS::Lambda::EventInvokeConfig") {
		p := s.Template.Resources[id].Properties
		if fid, ok := idFromRef(p["FunctionName"]); ok {
			if n, ok := p["MaximumRetryAttempts"].(float64); ok {
				retries[fid] = int(n)
			}
		}
	}
	for _, id := range s.Template.OfType("AWS::Lambda::Function") {
		raw, _ := json.Marshal(s.Template.Resources[id].Properties)
		var p functionProps
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("stackrun: function %s: %w", id, err)
		}
		if p.Runtime != "" && !strings.HasPrefix(p.Runtime, "provided") {
			// A deploy-time custom resource's handler (Node), not a function of the
			// running stack.
			s.t.Logf("stackrun: function %s (runtime %s) not run: the harness runs the stack's own bootstraps", id, p.Runtime)
			continue
		}
		f := &Function{LogicalID: id, Name: s.Template.Name(id), Description: p.Description,
			Env: map[string]string{}, Timeout: time.Duration(p.Timeout) * time.Second, MemoryMB: int(p.MemorySize), AsyncRetries: 2,
			Concurrency: max(1, int(p.CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency))}
		f.ARN = FunctionARN(f.Name)
		if f.SystemLogLevel = p.LoggingConfig.SystemLogLevel; f.SystemLogLevel == "" {
			f.SystemLogLevel = "INFO" // Lambda's default
		}
		if f.Timeout == 0 {
			f.Timeout = 3 * time.Second
		}
		if n, ok := retries[id]; ok {
			f.AsyncRetries = n
		}
		for k, v := range p.Environment.Variables {
			val, err := s.Template.Resolve(v)
			if err != nil {
				return fmt.Errorf("stackrun: function %s environment %s: %w", id, k, err)
			}
			f.Env[k] = val
		}
		role, ok := idFromRef(p.Role)
		if !ok {
			return fmt.Errorf("stackrun: function %s: role %v is not the template's", id, p.Role)
		}
		var err error
		if f.Statements, err = s.Template.RoleStatements(role); err != nil {
			return err
		}
		if f.Bootstrap, err = assetBootstrap(out, p.Code); err != nil {
			return fmt.Errorf("stackrun: function %s: %w", id, err)
		}
		f.Proxy = NewProxy(f.Name, f.Statements, s.emulator, s.lambda, s.reportDenial)
		env := f.lambdaEnv(p)
		// On Managed Instances Lambda keeps the function's MinExecutionEnvironments
		// running and adds environments as their CPU fills; the harness's loads stay at
		// the minimum (at least one), each environment running Concurrency invocations.
		n := instances
		if f.Concurrency > 1 {
			n = max(1, int(p.FunctionScalingConfig.MinExecutionEnvironments))
		}
		f.idle = make(chan *lambdarun.Process, n*f.Concurrency)
		for range n {
			f.instances = append(f.instances, lambdarun.Start(s.t, b.RIE, f.Name, f.Bootstrap, env))
		}
		// Slots interleaved over the instances: concurrent invocations spread over the
		// environments as Lambda's router spreads them.
		for range f.Concurrency {
			for _, pr := range f.instances {
				f.idle <- pr
			}
		}
		s.Functions[id] = f
		s.byName[f.Name] = f
	}
	return nil
}

// lambdaEnv is the process environment of f: the template's variables, what Lambda
// itself sets (the function's name, memory, region, log format, its role's credentials
// — here a per-function test key), and the one override of the harness: the SDK's
// AWS_ENDPOINT_URL pointing at f's IAM-checking proxy.
func (f *Function) lambdaEnv(p functionProps) []string {
	env := []string{
		"AWS_LAMBDA_FUNCTION_NAME=" + f.Name,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=" + strconv.Itoa(int(p.MemorySize)),
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(int(f.Timeout.Seconds())),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + f.Name,
		"AWS_REGION=" + Region,
		"AWS_DEFAULT_REGION=" + Region,
		"AWS_ACCESS_KEY_ID=AKIA" + strings.ToUpper(hex.EncodeToString([]byte(f.LogicalID))[:12]),
		"AWS_SECRET_ACCESS_KEY=stackrun-" + f.LogicalID,
		"AWS_SESSION_TOKEN=stackrun",
		"AWS_EC2_METADATA_DISABLED=true",
		"_HANDLER=" + p.Handler,
		"TZ=:UTC",
		"AWS_ENDPOINT_URL=" + f.Proxy.URL(),
	}
	if p.LoggingConfig.LogFormat != "" {
		env = append(env, "AWS_LAMBDA_LOG_FORMAT="+p.LoggingConfig.LogFormat)
	}
	if f.Concurrency > 1 {
		env = append(env, "AWS_LAMBDA_MAX_CONCURRENCY="+strconv.Itoa(f.Concurrency))
	}
	keys := make([]string, 0, len(f.Env))
	for k := range f.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+f.Env[k])
	}
	return env
}

func (s *Stack) functionByARN(arn string) (*Function, bool) {
	f, ok := s.byName[FunctionName(arn)]
	return f, ok
}

func (s *Stack) startMappings(ctx context.Context) error {
	for _, id := range s.Template.OfType("AWS::Lambda::EventSourceMapping") {
		p := s.Template.Resources[id].Properties
		fnName, err := s.Template.Resolve(p["FunctionName"])
		if err != nil {
			return fmt.Errorf("stackrun: mapping %s: %w", id, err)
		}
		fn, ok := s.functionByARN(fnName)
		if !ok {
			return fmt.Errorf("stackrun: mapping %s: no function %s", id, fnName)
		}
		src, err := s.Template.Resolve(p["EventSourceArn"])
		if err != nil {
			return fmt.Errorf("stackrun: mapping %s: %w", id, err)
		}
		if !strings.Contains(src, ":table/") || !strings.Contains(src, "/stream/") {
			return fmt.Errorf("stackrun: mapping %s: source %s is not a DynamoDB stream", id, src)
		}
		if frt, ok := p["FunctionResponseTypes"]; ok {
			return fmt.Errorf("stackrun: mapping %s: FunctionResponseTypes %v not run by the harness", id, frt)
		}
		st := MappingSettings{BatchSize: 100, MaxRetries: -1, StartingPosition: "LATEST", ParallelizationFactor: 1}
		num := func(k string) (int, bool) {
			f, ok := p[k].(float64)
			return int(f), ok
		}
		if n, ok := num("BatchSize"); ok {
			st.BatchSize = n
		}
		if n, ok := num("MaximumRetryAttempts"); ok {
			st.MaxRetries = n
		}
		if n, ok := num("MaximumRecordAgeInSeconds"); ok && n > 0 {
			st.MaxRecordAge = time.Duration(n) * time.Second
		}
		if n, ok := num("ParallelizationFactor"); ok {
			st.ParallelizationFactor = n
		}
		if st.ParallelizationFactor != 1 {
			return fmt.Errorf("stackrun: mapping %s: ParallelizationFactor %d not run by the harness (1 only)", id, st.ParallelizationFactor)
		}
		if n, ok := num("MaximumBatchingWindowInSeconds"); ok {
			st.BatchingWindow = time.Duration(n) * time.Second
		}
		st.Bisect, _ = p["BisectBatchOnFunctionError"].(bool)
		if sp, ok := p["StartingPosition"].(string); ok {
			st.StartingPosition = sp
		}
		if dc, ok := p["DestinationConfig"].(map[string]any); ok {
			of, _ := dc["OnFailure"].(map[string]any)
			if st.OnFailure, err = s.Template.Resolve(of["Destination"]); err != nil {
				return fmt.Errorf("stackrun: mapping %s destination: %w", id, err)
			}
		}
		// Lambda polls the stream with the function's execution role: so does the
		// harness, through the function's proxy.
		client := dynamodbstreams.New(dynamodbstreams.Options{
			Region: Region, BaseEndpoint: aws.String(fn.Proxy.URL()),
			Credentials: credentials.NewStaticCredentialsProvider("AKIAESM"+strings.ToUpper(randomID()), "stackrun", ""),
		})
		m := &streamMapping{settings: st, streamARN: src, client: client, poll: 200 * time.Millisecond,
			invoke: func(ctx context.Context, payload []byte) error {
				ctx, cancel := context.WithTimeout(ctx, fn.Timeout+30*time.Second)
				defer cancel()
				_, err := fn.Invoke(ctx, payload)
				return err
			}}
		m.discard = func(ctx context.Context, recs []events.DynamoDBEventRecord, reason string) {
			msg := fmt.Sprintf("%s: %d records discarded (%s)", id, len(recs), reason)
			if st.OnFailure != "" {
				d := Decide(fn.Statements, Access{"sqs:SendMessage", st.OnFailure})
				if !d.Allowed {
					s.reportDenial(Denial{Function: fn.Name, Method: "SendMessage", Path: st.OnFailure, Access: []Access{d.Access}})
				}
				msg += " to " + st.OnFailure
			}
			s.mu.Lock()
			s.failures = append(s.failures, msg)
			s.mu.Unlock()
			s.t.Logf("stackrun: stream mapping %s", msg)
		}
		s.mappings[id] = m
		s.t.Logf("stackrun: stream mapping %s: %s → %s %+v", id, src, fn.Name, st)
		s.wg.Go(func() { m.run(ctx) })
	}
	return nil
}

// MappingStats returns what each stream mapping did, by logical id.
func (s *Stack) MappingStats() map[string]mappingStats {
	out := map[string]mappingStats{}
	for id, m := range s.mappings {
		out[id] = m.Stats()
	}
	return out
}

var rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// schedule is one EventBridge rule target invoked on the compressed clock.
type schedule struct {
	rule, arn string
	period    time.Duration
	fn        *Function
	input     []byte

	mu           sync.Mutex
	runs, errors int
	lastErr      string
}

func (s *Stack) startSchedules(ctx context.Context, minute time.Duration) error {
	for _, id := range s.Template.OfType("AWS::Events::Rule") {
		p := s.Template.Resources[id].Properties
		expr, _ := p["ScheduleExpression"].(string)
		if expr == "" {
			continue
		}
		if st, _ := p["State"].(string); st == "DISABLED" {
			continue
		}
		m := rateExpr.FindStringSubmatch(expr)
		if m == nil {
			return fmt.Errorf("stackrun: rule %s: schedule %q not run by the harness (rate() only)", id, expr)
		}
		n, _ := strconv.Atoi(m[1])
		unit := map[string]int{"minute": 1, "minutes": 1, "hour": 60, "hours": 60, "day": 1440, "days": 1440}[m[2]]
		period := time.Duration(n*unit) * minute
		ruleARN, err := s.Template.ARN(id)
		if err != nil {
			return err
		}
		targets, _ := p["Targets"].([]any)
		for _, raw := range targets {
			tg, _ := raw.(map[string]any)
			arn, err := s.Template.Resolve(tg["Arn"])
			if err != nil {
				return fmt.Errorf("stackrun: rule %s target: %w", id, err)
			}
			fn, ok := s.functionByARN(arn)
			if !ok {
				return fmt.Errorf("stackrun: rule %s: target %s is not a function of the stack", id, arn)
			}
			if err := s.permitted(fn, "events.amazonaws.com", ruleARN); err != nil {
				return fmt.Errorf("stackrun: rule %s: %w", id, err)
			}
			input := scheduledEvent(ruleARN)
			if in, ok := tg["Input"].(string); ok {
				input = []byte(in)
			}
			sc := &schedule{rule: id, arn: ruleARN, period: period, fn: fn, input: input}
			s.rules[id] = sc
			s.t.Logf("stackrun: schedule %s %s → %s every %v (compressed: a minute lasts %v)", id, expr, fn.Name, period, minute)
			s.wg.Go(func() { sc.run(ctx) })
		}
	}
	return nil
}

// run invokes the target every period, as EventBridge does (asynchronously; a tick
// that finds the previous invocation still running waits for it).
func (sc *schedule) run(ctx context.Context) {
	tick := time.NewTicker(sc.period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ictx, cancel := context.WithTimeout(ctx, sc.fn.Timeout+30*time.Second)
		_, err := sc.fn.Invoke(ictx, sc.input)
		cancel()
		if ctx.Err() != nil {
			return
		}
		sc.mu.Lock()
		sc.runs++
		if err != nil {
			sc.errors++
			sc.lastErr = err.Error()
		}
		sc.mu.Unlock()
	}
}

// ScheduleRuns returns, by rule logical id, how many scheduled invocations ran and
// failed, and the last error.
func (s *Stack) ScheduleRuns() map[string][3]string {
	out := map[string][3]string{}
	for id, sc := range s.rules {
		sc.mu.Lock()
		out[id] = [3]string{strconv.Itoa(sc.runs), strconv.Itoa(sc.errors), sc.lastErr}
		sc.mu.Unlock()
	}
	return out
}

// scheduledEvent is EventBridge's scheduled event for a rule.
func scheduledEvent(ruleARN string) []byte {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": randomID(), "detail-type": "Scheduled Event", "source": "aws.events",
		"account": Account, "time": time.Now().UTC().Format(time.RFC3339), "region": Region,
		"resources": []string{ruleARN}, "detail": map[string]any{},
	})
	return b
}

// permitted checks that an AWS::Lambda::Permission of the template lets principal
// (a service) invoke fn from source (a rule's or an API route's ARN).
func (s *Stack) permitted(fn *Function, principal, source string) error {
	var unresolved []error
	for _, id := range s.Template.OfType("AWS::Lambda::Permission") {
		p := s.Template.Resources[id].Properties
		target, err := s.Template.Resolve(p["FunctionName"])
		if err != nil || FunctionName(target) != fn.Name {
			continue
		}
		if p["Principal"] != principal || p["Action"] != "lambda:InvokeFunction" {
			continue
		}
		src, ok := p["SourceArn"]
		if !ok {
			return nil
		}
		pattern, err := s.Template.Resolve(src)
		if err != nil {
			unresolved = append(unresolved, fmt.Errorf("%s: %w", id, err))
			continue
		}
		if wildcardMatch(pattern, source, false) {
			return nil
		}
	}
	return fmt.Errorf("no AWS::Lambda::Permission lets %s invoke %s from %s %v", principal, fn.Name, source, unresolved)
}

func (s *Stack) startAPI(callers []Caller) error {
	apis := s.Template.OfType("AWS::ApiGatewayV2::Api")
	if len(apis) != 1 {
		return fmt.Errorf("stackrun: %d HTTP APIs in the template, the harness runs one", len(apis))
	}
	apiID := s.Template.Name(apis[0])
	stage := "$default"
	for _, id := range s.Template.OfType("AWS::ApiGatewayV2::Stage") {
		if n, ok := s.Template.Resources[id].Properties["StageName"].(string); ok {
			stage = n
		}
	}
	integrations := map[string]*Function{} // integration id → function
	for _, id := range s.Template.OfType("AWS::ApiGatewayV2::Integration") {
		p := s.Template.Resources[id].Properties
		if p["IntegrationType"] != "AWS_PROXY" || p["PayloadFormatVersion"] != "2.0" {
			return fmt.Errorf("stackrun: integration %s: only AWS_PROXY with payload 2.0 is run", id)
		}
		uri, err := s.Template.Resolve(p["IntegrationUri"])
		if err != nil {
			return fmt.Errorf("stackrun: integration %s: %w", id, err)
		}
		fn, ok := s.functionByARN(uri)
		if !ok {
			return fmt.Errorf("stackrun: integration %s: %s is not a function of the stack", id, uri)
		}
		integrations[s.Template.Name(id)] = fn
	}
	var routes []apigwtest.Route
	byRoute := map[string]*Function{}
	for _, id := range s.Template.OfType("AWS::ApiGatewayV2::Route") {
		p := s.Template.Resources[id].Properties
		key, _ := p["RouteKey"].(string)
		auth, _ := p["AuthorizationType"].(string)
		if auth != "AWS_IAM" && auth != "NONE" {
			return fmt.Errorf("stackrun: route %s: authorization %q not run by the harness", key, auth)
		}
		target, err := s.Template.Resolve(p["Target"])
		if err != nil {
			return fmt.Errorf("stackrun: route %s: %w", key, err)
		}
		fn, ok := integrations[strings.TrimPrefix(target, "integrations/")]
		if !ok {
			return fmt.Errorf("stackrun: route %s: target %s is not an integration of the stack", key, target)
		}
		// API Gateway invokes the function under the function's resource policy.
		method, path := "$default", "$default"
		if key != "$default" {
			method, path, _ = strings.Cut(key, " ")
			path = strings.TrimPrefix(path, "/")
		}
		source := fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/%s/%s/%s", Region, Account, apiID, stage, method, path)
		if err := s.permitted(fn, "apigateway.amazonaws.com", source); err != nil {
			return fmt.Errorf("stackrun: route %s: %w", key, err)
		}
		routes = append(routes, apigwtest.Route{Key: key, Public: auth == "NONE"})
		byRoute[key] = fn
	}
	apiARN := fmt.Sprintf("arn:aws:execute-api:%s:%s:%s", Region, Account, apiID)
	principals, policies := callerPolicies(callers, "{api}", apiARN)
	front, url, err := s.serveFront(apigwtest.Config{
		Region: Region, APIID: apiID, Stage: stage, AccountID: Account,
		Principals: principals, Routes: routes,
		// The route's IAM authorization: execute-api:Invoke on the request's ARN in the
		// caller's identity policy.
		Authorize: func(_ context.Context, a apigwtest.Authorization) error {
			d := Decide(policies[a.Caller.AccessKeyID], Access{"execute-api:Invoke", a.Resource})
			if !d.Allowed {
				return fmt.Errorf("User: %s is not authorized to perform: execute-api:Invoke on resource: %s", a.Caller.ARN, a.Resource)
			}
			return nil
		},
		Invoker: apigwtest.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
			var ev struct {
				RouteKey string `json:"routeKey"`
			}
			if err := json.Unmarshal(payload, &ev); err != nil {
				return nil, err
			}
			fn, ok := byRoute[ev.RouteKey]
			if !ok {
				return nil, fmt.Errorf("stackrun: no integration for route %q", ev.RouteKey)
			}
			start := time.Now()
			out, err := invokeWithin(ctx, fn, payload)
			s.countRoute(ev.RouteKey, start, err == nil)
			return out, err
		}),
	})
	if err != nil {
		return err
	}
	s.Front, s.APIURL = front, url
	s.t.Logf("stackrun: HTTP API %s (stage %s, %d routes) at %s", apiID, stage, len(routes), url)
	return nil
}

// callerPolicies returns the callers' principals and their identity policies by access
// key, with placeholder in the statements' resources standing for arn (the front's).
func callerPolicies(callers []Caller, placeholder, arn string) ([]apigwtest.Principal, map[string][]Statement) {
	policies := map[string][]Statement{}
	var principals []apigwtest.Principal
	for _, c := range callers {
		principals = append(principals, c.Principal)
		var stmts []Statement
		for _, st := range c.Statements {
			st.Resources = append([]string(nil), st.Resources...)
			for i, r := range st.Resources {
				st.Resources[i] = strings.ReplaceAll(r, placeholder, arn)
			}
			stmts = append(stmts, st)
		}
		policies[c.Principal.AccessKeyID] = stmts
	}
	return principals, policies
}

// serveFront builds the front cfg describes and serves it over HTTP until the test
// ends; it returns the front and its URL.
func (s *Stack) serveFront(cfg apigwtest.Config) (*apigwtest.Front, string, error) {
	front, err := apigwtest.New(cfg)
	if err != nil {
		return nil, "", err
	}
	srv := httptest.NewServer(front)
	s.t.Cleanup(srv.Close)
	return front, srv.URL, nil
}

// frontTimeout bounds one invocation through a front: API Gateway's integration
// timeout, and the api function's timeout behind its URL, are both 30 s.
const frontTimeout = 30 * time.Second

// invokeWithin invokes fn with payload as a front does, within frontTimeout.
func invokeWithin(ctx context.Context, fn *Function, payload []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, frontTimeout)
	defer cancel()
	return fn.Invoke(ctx, payload)
}

// startFunctionURL serves the template's function URL (AWS::Lambda::Url, AuthType
// AWS_IAM) behind a SigV4-checking front for the service lambda: a caller passes when
// its identity policy allows lambda:InvokeFunctionUrl and lambda:InvokeFunction on the
// function, or the function's resource policy (AWS::Lambda::Permission with
// FunctionUrlAuthType AWS_IAM, and InvokedViaFunctionUrl for the second) names the
// caller or its account. Conditions are not evaluated, as in Decide.
func (s *Stack) startFunctionURL(callers []Caller) error {
	urls := s.Template.OfType("AWS::Lambda::Url")
	if len(urls) == 0 {
		return nil
	}
	if len(urls) != 1 {
		return fmt.Errorf("stackrun: %d function URLs in the template, the harness runs one", len(urls))
	}
	p := s.Template.Resources[urls[0]].Properties
	if p["AuthType"] != "AWS_IAM" {
		return fmt.Errorf("stackrun: function URL %s: AuthType %v, only AWS_IAM is run", urls[0], p["AuthType"])
	}
	target, err := s.Template.Resolve(p["TargetFunctionArn"])
	if err != nil {
		return fmt.Errorf("stackrun: function URL %s: %w", urls[0], err)
	}
	fn, ok := s.functionByARN(target)
	if !ok {
		return fmt.Errorf("stackrun: function URL %s: %s is not a function of the stack", urls[0], target)
	}
	resourceAllows := func(caller apigwtest.Principal, action string) bool {
		for _, id := range s.Template.OfType("AWS::Lambda::Permission") {
			pp := s.Template.Resources[id].Properties
			name, err := s.Template.Resolve(pp["FunctionName"])
			if err != nil || FunctionName(name) != fn.Name || pp["Action"] != action {
				continue
			}
			if action == "lambda:InvokeFunctionUrl" && pp["FunctionUrlAuthType"] != "AWS_IAM" {
				continue
			}
			if action == "lambda:InvokeFunction" && pp["InvokedViaFunctionUrl"] != true {
				continue
			}
			principal, err := s.Template.Resolve(pp["Principal"])
			if err == nil && (principal == caller.ARN || principal == Account && strings.Contains(caller.ARN, ":"+Account+":")) {
				return true
			}
		}
		return false
	}
	principals, policies := callerPolicies(callers, "{function}", fn.ARN)
	urlID := strings.ToLower(s.Name) + "url"
	front, url, err := s.serveFront(apigwtest.Config{
		Region: Region, APIID: urlID, AccountID: Account, Service: apigwtest.ServiceLambda, FunctionARN: fn.ARN,
		Principals: principals,
		Authorize: func(_ context.Context, a apigwtest.Authorization) error {
			for _, action := range []string{"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"} {
				if !Decide(policies[a.Caller.AccessKeyID], Access{action, a.Resource}).Allowed && !resourceAllows(a.Caller, action) {
					return fmt.Errorf("User: %s is not authorized to perform: %s on resource: %s", a.Caller.ARN, action, a.Resource)
				}
			}
			return nil
		},
		Invoker: apigwtest.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
			var ev struct {
				RawPath        string `json:"rawPath"`
				RequestContext struct {
					HTTP struct{ Method string } `json:"http"`
				} `json:"requestContext"`
			}
			if err := json.Unmarshal(payload, &ev); err != nil {
				return nil, err
			}
			start := time.Now()
			out, err := invokeWithin(ctx, fn, payload)
			s.countRoute(urlRoute(ev.RequestContext.HTTP.Method, ev.RawPath), start, err == nil)
			return out, err
		}),
	})
	if err != nil {
		return err
	}
	s.URLFront, s.FunctionURL = front, url
	s.t.Logf("stackrun: function URL of %s (AWS_IAM) at %s", fn.Name, url)
	return nil
}

// urlRoute names a request through the function URL by the HTTP API route key it
// would have matched, so RouteInvocations counts both front doors alike: the topic
// name and the partition become {topic} and {partition}.
func urlRoute(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) >= 3 && parts[0] == "v1" && parts[1] == "topics" {
		parts[2] = "{topic}"
		if len(parts) >= 5 && parts[3] == "partitions" {
			parts[4] = "{partition}"
		}
	}
	return method + " /" + strings.Join(parts, "/")
}

// WaitFor polls cond until it holds, or fails t after timeout naming what, with the
// mappings', schedules' and invocations' state.
func (s *Stack) WaitFor(ctx context.Context, cond func() bool, timeout time.Duration, what string) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.t.Fatalf("stackrun: %s: not reached within %v (mappings %+v, schedules %v, async invocations %d)",
				what, timeout, s.MappingStats(), s.ScheduleRuns(), len(s.AsyncResults()))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Summary is a human-readable account of the run: invocations per function, the
// IAM actions each used, the conditions not evaluated, denials, failures.
func (s *Stack) Summary() string {
	var b strings.Builder
	ids := make([]string, 0, len(s.Functions))
	for id := range s.Functions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		f := s.Functions[id]
		n, failed := f.Invocations()
		fmt.Fprintf(&b, "function %s (%s): %d invocations, %d failed\n", f.Name, f.Description, n, failed)
		counts := f.Proxy.Counts()
		actions := make([]string, 0, len(counts))
		for a, c := range counts {
			actions = append(actions, fmt.Sprintf("%s×%d", a, c))
		}
		sort.Strings(actions)
		fmt.Fprintf(&b, "  AWS requests allowed by its role: %s\n", strings.Join(actions, " "))
		for _, c := range f.Proxy.Conditions() {
			fmt.Fprintf(&b, "  condition not evaluated (the statement allowed more than IAM would): %s\n", c)
		}
	}
	gws := make([]string, 0, len(s.Gateways))
	for id := range s.Gateways {
		gws = append(gws, id)
	}
	sort.Strings(gws)
	for _, id := range gws {
		counts := s.Gateways[id].Proxy.Counts()
		actions := make([]string, 0, len(counts))
		for a, c := range counts {
			actions = append(actions, fmt.Sprintf("%s×%d", a, c))
		}
		sort.Strings(actions)
		fmt.Fprintf(&b, "container %s on %s\n  AWS requests allowed by its task role: %s\n", id, s.Gateways[id].Addr, strings.Join(actions, " "))
	}
	for id, m := range s.MappingStats() {
		fmt.Fprintf(&b, "stream mapping %s: %+v\n", id, m)
	}
	for id, r := range s.ScheduleRuns() {
		fmt.Fprintf(&b, "schedule %s: %s runs, %s failed %s\n", id, r[0], r[1], r[2])
	}
	if s.Front != nil {
		st := s.Front.Stats()
		fmt.Fprintf(&b, "HTTP API: %d accepted, %d refused (403), %d failed\n", st.Accepted, st.Refused, st.Failed)
	}
	if s.URLFront != nil {
		st := s.URLFront.Stats()
		fmt.Fprintf(&b, "function URL: %d accepted, %d refused (403), %d failed\n", st.Accepted, st.Refused, st.Failed)
	}
	for _, d := range DistinctDenials(s.Denials()) {
		fmt.Fprintf(&b, "IAM DENIED %s\n", d)
	}
	for _, f := range s.StreamFailures() {
		fmt.Fprintf(&b, "stream failure %s\n", f)
	}
	return b.String()
}

func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
