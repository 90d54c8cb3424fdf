// Package stack is the Strata stack that cdk.json deploys: one Strata deployment (the
// construct of infra/strata) and the example order consumer of functions/consumer
// subscribed through it, configured from CDK context (Config, FromContext).
package stack

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/infra/strata"
	"github.com/stratalog/strata/pkg/deploy"
)

// BusinessKey is the partition key of the example consumer's business table: the
// record's "topic/partition/offset", so a replay never applies an effect twice.
const BusinessKey = "id"

// Config is the stack's configuration; FromContext reads it from CDK context
// ("strata:<name>" keys, see infra/README.md).
type Config struct {
	StackName string
	// AssetDir holds <function>/bootstrap for every function.
	AssetDir string
	// Props of the Strata deployment (AssetDir is set from the field above).
	Props strata.Props
	// ExampleTopic and ExampleGroup are what the example consumer consumes.
	ExampleTopic, ExampleGroup string
	// ExampleDeadLetter, when set, is the topic the example group dead-letters to: the
	// consumer gets the rights to append to it.
	ExampleDeadLetter string
	// ExampleHTTPGroup, when set, is a group whose members consume ExampleTopic over
	// HTTP (pkg/httpconsumer): the stack creates a role any principal of the account may
	// assume, with exactly GrantConsume's rights on that group and topic.
	ExampleHTTPGroup string
}

// contextKeys lists every context key FromContext reads, with its meaning.
var contextKeys = map[string]string{
	"strata:stackName":                     "stack name (default Strata)",
	"strata:defaultPartitions":             "partitions of a topic created without a count (default 4)",
	"strata:defaultRetentionHours":         "retention of a topic created without one (default 24)",
	"strata:maxRetentionDays":              "longest topic retention; the bucket expires objects a day later (default 7)",
	"strata:apiMemory":                     "api function memory, MiB (default 1024; 2048 on managed instances)",
	"strata:dispatchMemory":                "dispatch function memory, MiB (default 256)",
	"strata:retentionMemory":               "retention function memory, MiB (default 256)",
	"strata:compactMemory":                 "compaction function memory, MiB (default 1024)",
	"strata:compactIntervalMinutes":        "minutes between the compaction function's scheduled passes (default 5)",
	"strata:lagSecondsAlarm":               "consumer lag alarm threshold, seconds (default 300)",
	"strata:deadLetterAlarm":               "dead-lettered records alarm threshold per 5 minutes (default 1)",
	"strata:errorsAlarm":                   "function errors alarm threshold per 5 minutes (default 1)",
	"strata:throttlesAlarm":                "function throttles alarm threshold per 5 minutes (default 1)",
	"strata:appendP99AlarmMs":              "append latency p99 alarm threshold, ms (default 1000)",
	"strata:dataLossAlarmMinutes":          "time to data loss alarm threshold: fires below it, minutes (default 60)",
	"strata:parkedKeysAlarm":               "parked keys alarm threshold per subscription: fires at or above it (default 1, any key parked)",
	"strata:iteratorAgeAlarmSeconds":       "dispatch stream iterator age alarm threshold, seconds (default 300)",
	"strata:removal":                       "retain (default) or destroy: what deleting the stack does to the bucket and tables",
	"strata:managedInstances":              "true runs the api function on Lambda Managed Instances (default false: on-demand)",
	"strata:expectedRequestsPerSecond":     "append requests/s the api function on managed instances is sized for: its execution environments reach twice the invocations in flight at that rate (default 1000)",
	"strata:expectedBurstRequests":         "append requests that arrive at once at the api on managed instances (producers aligned to the clock: the fleet's requests per linger over their AlignSlots); the environments reach twice it when more than the rate's in flight (default 0)",
	"strata:systemLogLevel":                "level of Lambda's own records in every function's log stream: WARN (default: failures only), INFO (adds each invocation's start and report records) or DEBUG",
	"strata:frontDoor":                     "how callers reach the api: apigateway (default), function-url (its URL, IAM auth) or both",
	"strata:groupCommitWindowMs":           "the api's group-commit window, ms (default: 5 on managed instances, off on demand; 0 is off)",
	"strata:groupCommitBudgetBytes":        "the api's group-commit batch budget, bytes (default 1 MiB, at most 64 MiB)",
	"strata:consumerBatchingWindowSeconds": "dispatch's stream batching window, whole seconds 0–300: consumers invoked at most once per partition per window (default 0: every stream batch)",
	"strata:apiGrants":                     "the api's grants keyed by principal ARN pattern, JSON (STRATA_GRANTS; default none: every call refused)",
	"strata:everyPrincipalAdmin":           "true makes every IAM principal allowed to invoke the API an admin (default false)",
	"strata:kafkaGateway":                  "true deploys the Kafka gateway (strata kafka) on ECS Fargate behind an internal Network Load Balancer (default false)",
	"strata:kafkaCertificateArn":           "ACM certificate of the gateway's TLS listener (port 9094); without one the listener is plain TCP on 9092 and synth warns",
	"strata:kafkaHost":                     "the name Kafka clients connect to and the gateway advertises; required with a certificate (default the load balancer's DNS name)",
	"strata:kafkaMinTasks":                 "fewest gateway tasks, at least 2 (default 2)",
	"strata:kafkaMaxTasks":                 "most gateway tasks the CPU scaling may run (default 8)",
	"strata:kafkaServerErrorsAlarm":        "gateway server errors alarm threshold per 5 minutes (default 1)",
	"strata:exampleTopic":                  "topic of the example order consumer (default orders)",
	"strata:exampleGroup":                  "group of the example order consumer (default order-consumer)",
	"strata:exampleDeadLetter":             "topic the example group dead-letters to; the consumer may append to it (default none)",
	"strata:exampleHTTPGroup":              "a group whose members consume the example topic over HTTP: a role (output HttpConsumerRoleArn) with GrantConsume of it (default none)",
	"strata:assetDir":                      "where the function assets are (default build/functions; read by infra/app)",
	"strata:requireAssets":                 "true refuses to synthesize with placeholder assets (read by infra/app)",
}

// ContextKeys returns the context keys FromContext reads and what each means.
func ContextKeys() map[string]string {
	out := make(map[string]string, len(contextKeys))
	for k, v := range contextKeys {
		out[k] = v
	}
	return out
}

// FromContext reads Config from the app's context; assetDir is where the assets are.
// A value that does not parse is an error naming the key.
func FromContext(node constructs.Node, assetDir string) (Config, error) {
	get := func(key string) (string, bool) {
		v := node.TryGetContext(jsii.String(key))
		if v == nil {
			return "", false
		}
		return fmt.Sprint(v), true
	}
	var err error
	num := func(key string) float64 {
		s, ok := get(key)
		if !ok || err != nil {
			return 0
		}
		f, perr := strconv.ParseFloat(s, 64)
		if perr != nil || f < 0 {
			err = fmt.Errorf("stack: context %s = %q: want a non-negative number", key, s)
		}
		return f
	}
	str := func(key, def string) string {
		if s, ok := get(key); ok && s != "" {
			return s
		}
		return def
	}
	cfg := Config{
		StackName:    str("strata:stackName", "Strata"),
		AssetDir:     assetDir,
		ExampleTopic: str("strata:exampleTopic", "orders"),
		ExampleGroup: str("strata:exampleGroup", "order-consumer"),
	}
	cfg.ExampleDeadLetter = str("strata:exampleDeadLetter", "")
	cfg.ExampleHTTPGroup = str("strata:exampleHTTPGroup", "")
	p := &cfg.Props
	p.AssetDir = assetDir
	p.DefaultPartitions = int(num("strata:defaultPartitions"))
	p.DefaultRetention = time.Duration(num("strata:defaultRetentionHours") * float64(time.Hour))
	p.MaxRetention = time.Duration(num("strata:maxRetentionDays") * float64(24*time.Hour))
	p.APIMemoryMiB = int(num("strata:apiMemory"))
	p.DispatchMemoryMiB = int(num("strata:dispatchMemory"))
	p.RetentionMemoryMiB = int(num("strata:retentionMemory"))
	p.CompactMemoryMiB = int(num("strata:compactMemory"))
	p.CompactInterval = time.Duration(num("strata:compactIntervalMinutes") * float64(time.Minute))
	p.Alarms = strata.AlarmThresholds{
		LagSeconds:        num("strata:lagSecondsAlarm"),
		DeadLettered:      num("strata:deadLetterAlarm"),
		FunctionErrors:    num("strata:errorsAlarm"),
		Throttles:         num("strata:throttlesAlarm"),
		AppendLatencyP99:  time.Duration(num("strata:appendP99AlarmMs") * float64(time.Millisecond)),
		TimeToDataLoss:    time.Duration(num("strata:dataLossAlarmMinutes") * float64(time.Minute)),
		StreamIteratorAge: time.Duration(num("strata:iteratorAgeAlarmSeconds") * float64(time.Second)),
		ParkedKeys:        num("strata:parkedKeysAlarm"),
	}
	switch r := str("strata:removal", "retain"); r {
	case "retain":
		p.RemovalPolicy = awscdk.RemovalPolicy_RETAIN
	case "destroy":
		p.RemovalPolicy = awscdk.RemovalPolicy_DESTROY
	default:
		err = fmt.Errorf("stack: context strata:removal = %q: want retain or destroy", r)
	}
	p.FrontDoor = strata.FrontDoor(str("strata:frontDoor", string(strata.FrontDoorAPIGateway)))
	p.SystemLogLevel = strata.SystemLogLevel(str("strata:systemLogLevel", string(strata.SystemLogLevelWarn)))
	if _, ok := get("strata:groupCommitWindowMs"); ok {
		p.GroupCommitWindow = time.Duration(num("strata:groupCommitWindowMs") * float64(time.Millisecond))
		if p.GroupCommitWindow == 0 {
			p.GroupCommitWindow = -1 // 0 is off (rendered "0")
		}
	}
	p.GroupCommitBudget = int(num("strata:groupCommitBudgetBytes"))
	p.ConsumerBatchingWindow = time.Duration(num("strata:consumerBatchingWindowSeconds") * float64(time.Second))
	switch m := str("strata:managedInstances", "false"); m {
	case "false":
	case "true":
		p.ManagedInstances = &strata.ManagedInstances{ExpectedRequestsPerSecond: num("strata:expectedRequestsPerSecond"),
			ExpectedBurstRequests: num("strata:expectedBurstRequests")}
	default:
		err = fmt.Errorf("stack: context strata:managedInstances = %q: want true or false", m)
	}
	// Grants come as a JSON string (-c) or as JSON in cdk.json.
	switch v := node.TryGetContext(jsii.String("strata:apiGrants")).(type) {
	case nil:
	case string:
		p.APIGrants = v
	default:
		b, jerr := json.Marshal(v)
		if jerr != nil {
			err = fmt.Errorf("stack: context strata:apiGrants: %w", jerr)
		}
		p.APIGrants = string(b)
	}
	switch g := str("strata:kafkaGateway", "false"); g {
	case "false":
	case "true":
		p.KafkaGateway = &strata.KafkaGateway{
			CertificateArn: str("strata:kafkaCertificateArn", ""),
			Host:           str("strata:kafkaHost", ""),
			MinTasks:       int(num("strata:kafkaMinTasks")),
			MaxTasks:       int(num("strata:kafkaMaxTasks")),
		}
		p.Alarms.GatewayServerErrors = num("strata:kafkaServerErrorsAlarm")
	default:
		err = fmt.Errorf("stack: context strata:kafkaGateway = %q: want true or false", g)
	}
	switch a := str("strata:everyPrincipalAdmin", "false"); a {
	case "false":
	case "true":
		p.EveryPrincipalAdmin = true
	default:
		err = fmt.Errorf("stack: context strata:everyPrincipalAdmin = %q: want true or false", a)
	}
	return cfg, err
}

// Stack is the synthesized stack's parts, for tests and outputs.
type Stack struct {
	Stack         awscdk.Stack
	Strata        *strata.Strata
	Consumer      awslambda.Function
	BusinessTable awsdynamodb.Table
	// HTTPConsumer is the role of Config.ExampleHTTPGroup's members; nil without it.
	HTTPConsumer awsiam.Role
}

// New adds the Strata stack to app.
func New(app constructs.Construct, cfg Config) (*Stack, error) {
	st := awscdk.NewStack(app, jsii.String(cfg.StackName), &awscdk.StackProps{
		Description: jsii.String("Strata: a serverless partitioned log (S3 segments, DynamoDB sequencing, Lambda)"),
	})
	s, err := strata.New(st, "Strata", cfg.Props)
	if err != nil {
		return nil, err
	}
	out := &Stack{Stack: st, Strata: s}
	out.BusinessTable, out.Consumer = exampleConsumer(st, cfg, s.SystemLogLevel())
	sub := &strata.SubscribeOptions{DeadLetterTopic: cfg.ExampleDeadLetter}
	if err := s.Subscribe(out.Consumer, cfg.ExampleTopic, cfg.ExampleGroup, sub); err != nil {
		return nil, err
	}
	if g := cfg.ExampleHTTPGroup; g != "" {
		out.HTTPConsumer = awsiam.NewRole(st, jsii.String("HttpConsumerRole"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewAccountRootPrincipal(),
			Description: jsii.String("Strata example HTTP consumer: members of group " + g + " on topic " + cfg.ExampleTopic),
		})
		if _, err := s.GrantConsume(out.HTTPConsumer, g, cfg.ExampleTopic); err != nil {
			return nil, err
		}
	}
	// What another app attaches with strata.Attach(scope, id, strata.ImportAttributes(<stack name>)).
	if err := s.Export(cfg.StackName); err != nil {
		return nil, err
	}
	outputs := map[string]*string{
		"BucketName":    s.Bucket.BucketName(),
		"TablePrefix":   jsii.String(s.TablePrefix()),
		"BusinessTable": out.BusinessTable.TableName(),
		"DashboardName": s.Dashboard.DashboardName(),
	}
	if s.API != nil {
		outputs["ApiUrl"] = s.API.ApiEndpoint()
	}
	if s.FunctionURL != nil {
		outputs["FunctionUrl"] = s.FunctionURL.Url()
	}
	if out.HTTPConsumer != nil {
		outputs["HttpConsumerRoleArn"] = out.HTTPConsumer.RoleArn()
	}
	if g := s.Gateway; g != nil {
		outputs["KafkaBootstrap"] = g.Bootstrap
		outputs["KafkaLoadBalancerDns"] = g.LoadBalancer.LoadBalancerDnsName()
	}
	for id, v := range outputs {
		awscdk.NewCfnOutput(st, jsii.String(id), &awscdk.CfnOutputProps{Value: v})
	}
	return out, nil
}

// exampleConsumer is the order consumer of functions/consumer, a user's function as any
// other: its own role (its logs and conditional puts into its business table), and the
// Strata rights Subscribe grants.
func exampleConsumer(scope constructs.Construct, cfg Config, level strata.SystemLogLevel) (awsdynamodb.Table, awslambda.Function) {
	business := awsdynamodb.NewTable(scope, jsii.String("OrdersTable"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(BusinessKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		// The fenced effects' markers expire (group.PlanMarkerExpiry) by DynamoDB's TTL.
		TimeToLiveAttribute: jsii.String(deploy.BusinessTTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: cfg.Props.RemovalPolicy,
	})
	logs := awslogs.NewLogGroup(scope, jsii.String("OrderConsumerLogs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_TWO_WEEKS,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(scope, jsii.String("OrderConsumerRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Strata example order consumer"),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("OwnLogs"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("BusinessTable"),
		Actions:   jsii.Strings("dynamodb:PutItem"),
		Resources: &[]*string{business.TableArn()},
	}))
	fn := awslambda.NewFunction(scope, jsii.String("OrderConsumer"), &awslambda.FunctionProps{
		Description:   jsii.String("Strata example order consumer (functions/consumer)"),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(cfg.AssetDir, deploy.FunctionConsumer)), nil),
		MemorySize:    jsii.Number(256),
		Timeout:       awscdk.Duration_Minutes(jsii.Number(5)),
		Role:          role,
		LogGroup:      logs,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		// Lambda's own records at the level of the stack's functions.
		SystemLogLevelV2: awslambda.SystemLogLevel(level),
		Environment:      &map[string]*string{deploy.EnvBusinessTable: business.TableName()},
		// dispatch re-invokes a partition that still has lag; Lambda's own async
		// retries would only find the lease held.
		RetryAttempts: jsii.Number(0),
	})
	return business, fn
}
