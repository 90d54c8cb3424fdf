package strata

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// Deployment is what a consumer's app uses of a Strata deployment, whether it created
// it (New) or attached to one another app deployed (Attach).
type Deployment interface {
	// Subscribe makes dispatch invoke fn for each partition of topic where group lags
	// with no live lease, and grants fn what the consumer library needs.
	Subscribe(fn awslambda.IFunction, topic, group string, opts *SubscribeOptions) error
	// ConsumerStatements are the rights of a consumer of topic in group.
	ConsumerStatements(topic, group, deadLetterTopic string) []awsiam.PolicyStatement
	// ConsumerEnvironment is the environment the consumer library reads.
	ConsumerEnvironment(topic, group string) map[string]*string
	// GrantProduce and GrantConsume give a principal HTTP API routes of its topics.
	GrantProduce(grantee awsiam.IGrantable, topics ...string) (awsiam.Grant, error)
	GrantConsume(grantee awsiam.IGrantable, group string, topics ...string) (awsiam.Grant, error)
}

var (
	_ Deployment = (*Strata)(nil)
	_ Deployment = (*Attached)(nil)
)

// Attributes name a deployed Strata for Attach: literal values (its stack's outputs) or
// the tokens ImportAttributes makes of its exports (Strata.Export). The attaching stack
// must be in the deployment's account and region.
type Attributes struct {
	// TablePrefix is the deployment's STRATA_TABLE_PREFIX (output TablePrefix).
	TablePrefix string
	// BucketName is the segment bucket.
	BucketName string
	// ObjectPrefix is the deployment's Props.ObjectPrefix (default none). It is not
	// exported (a CloudFormation output cannot be empty): set it when the deployment
	// has one.
	ObjectPrefix string
	// HTTPAPIID is the HTTP API's id (for GrantProduce and GrantConsume); NoHTTPAPI for
	// a deployment reached by its function URL only.
	HTTPAPIID string
	// APIFunctionArn is the api function's ARN. An attached app's GrantProduce and
	// GrantConsume grant calling its function URL by it as well as the HTTP API's
	// routes: whichever the deployment does not have (front door apigateway or
	// function-url) grants nothing, and with imported attributes (tokens) the attaching
	// app cannot tell which it has.
	APIFunctionArn string
	// DispatchRoleArn is the dispatch function's role: Subscribe lets it invoke the
	// subscribed function (a resource policy on that function).
	DispatchRoleArn string
	// SubscriptionsPath is the deployment's Parameter Store path of attached
	// subscriptions (Strata.SubscriptionsPath).
	SubscriptionsPath string
}

// exportedAttr is one exported attribute: the export's name suffix and its field.
type exportedAttr struct {
	name  string
	field func(*Attributes) *string
}

// exported lists the attributes Export exports and ImportAttributes imports, in one
// place so that the two cannot drift.
var exported = []exportedAttr{
	{"TablePrefix", func(a *Attributes) *string { return &a.TablePrefix }},
	{"BucketName", func(a *Attributes) *string { return &a.BucketName }},
	{"HttpApiId", func(a *Attributes) *string { return &a.HTTPAPIID }},
	{"ApiFunctionArn", func(a *Attributes) *string { return &a.APIFunctionArn }},
	{"DispatchRoleArn", func(a *Attributes) *string { return &a.DispatchRoleArn }},
	{"SubscriptionsPath", func(a *Attributes) *string { return &a.SubscriptionsPath }},
}

// ExportName is the name of the export of attribute name under exportPrefix.
func ExportName(exportPrefix, name string) string { return exportPrefix + ":" + name }

// ExportNames lists the export names Export creates under exportPrefix.
func ExportNames(exportPrefix string) []string {
	out := make([]string, 0, len(exported))
	for _, e := range exported {
		out = append(out, ExportName(exportPrefix, e.name))
	}
	return out
}

// Attributes are this deployment's attributes, for Attach in another app.
func (s *Strata) Attributes() Attributes {
	apiID := NoHTTPAPI
	if s.API != nil {
		apiID = *s.API.ApiId()
	}
	return Attributes{
		TablePrefix:       s.tablePrefix,
		BucketName:        *s.Bucket.BucketName(),
		ObjectPrefix:      s.props.ObjectPrefix,
		HTTPAPIID:         apiID,
		APIFunctionArn:    *s.Functions[deploy.FunctionAPI].FunctionArn(),
		DispatchRoleArn:   *s.Functions[deploy.FunctionDispatch].Role().RoleArn(),
		SubscriptionsPath: s.subsPath,
	}
}

// Export adds a stack output exported as ExportName(exportPrefix, name) for each
// attribute Attach needs, so that another app attaches with
// Attach(scope, id, ImportAttributes(exportPrefix)). Export names are unique per account
// and region: use the stack name as the prefix. While another stack imports them,
// CloudFormation refuses to change or delete them, and so to delete the deployment.
func (s *Strata) Export(exportPrefix string) error {
	if exportPrefix == "" {
		return fmt.Errorf("strata: export: empty prefix")
	}
	a := s.Attributes()
	for _, e := range exported {
		awscdk.NewCfnOutput(s, jsii.String("Export"+e.name), &awscdk.CfnOutputProps{
			Value:       e.field(&a),
			ExportName:  jsii.String(ExportName(exportPrefix, e.name)),
			Description: jsii.String("Strata attribute " + e.name + " (strata.Attach)"),
		})
	}
	return nil
}

// ImportAttributes are the attributes a deployment exported under exportPrefix
// (Strata.Export), as Fn::ImportValue tokens; ObjectPrefix is left empty.
func ImportAttributes(exportPrefix string) Attributes {
	var a Attributes
	for _, e := range exported {
		*e.field(&a) = *awscdk.Fn_ImportValue(jsii.String(ExportName(exportPrefix, e.name)))
	}
	return a
}

// Attached is a Strata deployment another app deployed, attached by Attach: a consumer
// app subscribes its own functions to the deployment's topics and grants its principals
// routes of the deployment's API, without changing the deployment's stack.
type Attached struct {
	constructs.Construct

	// Alarms lists the lag and dead-letter alarms of each subscription made here, in
	// creation order (default thresholds of AlarmThresholds, no actions: add your own).
	Alarms []awscloudwatch.Alarm

	attrs      Attributes
	t          target
	subscribed map[[2]string]bool
	permitted  map[string]bool // functions (by node path) dispatch may invoke already
	granted    map[string]int  // subscriptions per function (node path)
}

// Attach references the deployment attrs names in scope. Literal attributes are
// checked; tokens (ImportAttributes) are checked by CloudFormation at deploy time.
func Attach(scope constructs.Construct, id string, attrs Attributes) (*Attached, error) {
	if err := attrs.check(); err != nil {
		return nil, err
	}
	a := &Attached{attrs: attrs, subscribed: map[[2]string]bool{}, permitted: map[string]bool{}, granted: map[string]int{}}
	constructs.NewConstruct_Override(a, scope, jsii.String(id))
	tables := map[string]*string{}
	for _, ts := range dynamo.Tables() {
		t := awsdynamodb.Table_FromTableName(a, jsii.String("Table-"+ts.Suffix), jsii.String(attrs.TablePrefix+ts.Suffix))
		tables[ts.Suffix] = t.TableArn()
	}
	bucket := awss3.Bucket_FromBucketName(a, jsii.String("Segments"), jsii.String(attrs.BucketName))
	a.t = target{
		tableArn:      func(suffix string) *string { return tables[suffix] },
		bucket:        bucket,
		segmentPrefix: attrs.ObjectPrefix + deploy.SegmentKeyPrefix,
		settings:      deploy.Settings{Bucket: attrs.BucketName, TablePrefix: attrs.TablePrefix, ObjectPrefix: attrs.ObjectPrefix, MetricsNamespace: deploy.MetricsNamespace},
	}
	if attrs.HTTPAPIID != NoHTTPAPI {
		a.t.api = awsapigatewayv2.HttpApi_FromHttpApiAttributes(a, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiAttributes{
			HttpApiId: jsii.String(attrs.HTTPAPIID),
		})
	}
	a.t.urlFunction = jsii.String(attrs.APIFunctionArn)
	return a, nil
}

// check validates the literal attributes: all but ObjectPrefix are required, and each
// literal must be what the deployment could have.
func (a Attributes) check() error {
	for _, e := range exported {
		if *e.field(&a) == "" {
			return fmt.Errorf("strata: attach: attribute %s is required", e.name)
		}
	}
	lit := func(v string) bool { return !*awscdk.Token_IsUnresolved(jsii.String(v)) }
	switch {
	case lit(a.TablePrefix) && !tablePrefixRE.MatchString(a.TablePrefix):
		return fmt.Errorf("strata: attach: TablePrefix %q is not a table prefix", a.TablePrefix)
	case lit(a.SubscriptionsPath) && !validParameterPath(a.SubscriptionsPath):
		return fmt.Errorf("strata: attach: SubscriptionsPath %q is not a Parameter Store path", a.SubscriptionsPath)
	case lit(a.BucketName) && !bucketNameRE.MatchString(a.BucketName):
		return fmt.Errorf("strata: attach: BucketName %q is not a bucket name", a.BucketName)
	case !lit(a.ObjectPrefix):
		return fmt.Errorf("strata: attach: ObjectPrefix must be a literal (it is not exported)")
	case len(a.ObjectPrefix) > 512 || strings.ContainsAny(a.ObjectPrefix, "*?"):
		return fmt.Errorf("strata: attach: ObjectPrefix %q: no * or ?, at most 512 bytes", a.ObjectPrefix)
	}
	return nil
}

// bucketNameRE is S3's rule for bucket names (3 to 63 of a-z 0-9 . -, starting and
// ending with a letter or digit).
var bucketNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// Attributes are the attributes Attach was given.
func (a *Attached) Attributes() Attributes { return a.attrs }

// Subscribe subscribes fn to topic in group from this app: it writes the subscription
// as a Parameter Store parameter under the deployment's path (deleted with this stack:
// that unsubscribes), which dispatch reads within a minute; lets the deployment's
// dispatch role invoke fn (a resource policy on fn, so the deployment's stack is not
// changed); grants fn ConsumerStatements; and sets fn's environment when fn is a
// Function created in this app. A topic and group may be subscribed once per deployment
// (a second parameter of the same name fails the deploy); bad names are an error and
// change nothing. It also adds the subscription's lag and dead-letter alarms (Alarms).
func (a *Attached) Subscribe(fn awslambda.IFunction, topic, group string, opts *SubscribeOptions) error {
	if opts == nil {
		opts = &SubscribeOptions{}
	}
	sub := deploy.Subscription{Topic: topic, Group: group, Function: *fn.FunctionArn()}
	if err := sub.Validate(); err != nil {
		return fmt.Errorf("strata: subscribe: %w", err)
	}
	if opts.DeadLetterTopic != "" {
		if err := validTopic(opts.DeadLetterTopic); err != nil {
			return fmt.Errorf("strata: subscribe: dead-letter %w", err)
		}
	}
	if a.subscribed[[2]string{topic, group}] {
		return fmt.Errorf("strata: subscribe: topic %q and group %q are already subscribed", topic, group)
	}
	if fn.Role() == nil {
		return fmt.Errorf("strata: subscribe: function %s has no role to grant to (an imported function: attach ConsumerStatements to its role yourself)", *fn.Node().Path())
	}
	value, err := deploy.EncodeSubscriptionParameter(sub)
	if err != nil {
		return fmt.Errorf("strata: subscribe: %w", err)
	}
	a.subscribed[[2]string{topic, group}] = true

	awsssm.NewStringParameter(a, jsii.String("Subscription:"+topic+":"+group), &awsssm.StringParameterProps{
		ParameterName: jsii.String(deploy.SubscriptionParameterName(a.attrs.SubscriptionsPath, topic, group)),
		StringValue:   jsii.String(value),
		Description:   jsii.String("Strata subscription: dispatch invokes the function for topic " + topic + ", group " + group),
		Tier:          awsssm.ParameterTier_STANDARD,
		SimpleName:    jsii.Bool(false),
	})
	if path := *fn.Node().Path(); !a.permitted[path] {
		a.permitted[path] = true
		fn.AddPermission(jsii.String("StrataDispatch"), &awslambda.Permission{
			Principal: awsiam.NewArnPrincipal(jsii.String(a.attrs.DispatchRoleArn)),
			Action:    jsii.String("lambda:InvokeFunction"),
		})
	}
	grantConsumer(fn, a.t.consumerStatements(topic, group, opts.DeadLetterTopic), a.granted)
	if f, ok := fn.(awslambda.Function); ok {
		for k, v := range a.t.consumerEnvironment(topic, group) {
			f.AddEnvironment(jsii.String(k), v, nil)
		}
	}
	a.observe(topic, group)
	return nil
}

// observe adds the subscription's lag, dead-letter, time to data loss and parked keys
// alarms (as Strata.Subscribe does in the deployment's stack) to this stack: the metrics
// are the consumer library's, emitted by the subscribed function, and the deployment's
// dispatch sweep (time to data loss, parked keys).
func (a *Attached) observe(topic, group string) {
	scope := constructs.NewConstruct(a, jsii.String("Alarms:"+group+":"+topic))
	dims := map[string]*string{DimensionGroup: jsii.String(group), DimensionTopic: jsii.String(topic)}
	for _, al := range []struct {
		id, what, metric, stat string
		threshold              float64
	}{
		{"LagSeconds", "Consumer lag in seconds", MetricLagSeconds, "Maximum", defaultLagSeconds},
		{"DeadLettered", "Records dead-lettered", MetricDeadLettered, "Sum", defaultDeadLettered},
		{"TimeToDataLoss", "Seconds until unread records expire", MetricSecondsToDataLoss, "Minimum", defaultTimeToDataLoss.Seconds()},
		{"ParkedKeys", "Keys parked", MetricParkedKeys, "Maximum", defaultParkedKeys},
	} {
		op := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
		if al.metric == MetricSecondsToDataLoss {
			op = awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD
		}
		a.Alarms = append(a.Alarms, awscloudwatch.NewAlarm(scope, jsii.String(al.id), &awscloudwatch.AlarmProps{
			Metric:             strataMetric(al.metric, al.stat, dims),
			Threshold:          jsii.Number(al.threshold),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: op,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
			AlarmDescription:   jsii.String(al.what + " of group " + group + " on topic " + topic),
		}))
	}
}

// ConsumerStatements are the rights of a consumer of topic in group (see
// Strata.ConsumerStatements), on the attached deployment's tables and bucket.
func (a *Attached) ConsumerStatements(topic, group, deadLetterTopic string) []awsiam.PolicyStatement {
	return a.t.consumerStatements(topic, group, deadLetterTopic)
}

// ConsumerEnvironment is the environment the consumer library reads for topic and group.
func (a *Attached) ConsumerEnvironment(topic, group string) map[string]*string {
	return a.t.consumerEnvironment(topic, group)
}

// GrantProduce lets grantee append to and describe each topic (see Strata.GrantProduce).
func (a *Attached) GrantProduce(grantee awsiam.IGrantable, topics ...string) (awsiam.Grant, error) {
	return a.t.grantProduce(grantee, topics...)
}

// GrantConsume lets grantee consume each topic in group over the HTTP API (see
// Strata.GrantConsume).
func (a *Attached) GrantConsume(grantee awsiam.IGrantable, group string, topics ...string) (awsiam.Grant, error) {
	return a.t.grantConsume(grantee, group, topics...)
}
