package strata

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store/dynamo"
	"github.com/stratalog/strata/pkg/wire"
)

// SubscribeOptions are the optional settings of a subscription.
type SubscribeOptions struct {
	// DeadLetterTopic, when the group dead-letters to a topic, gives the function the
	// rights to append to it.
	DeadLetterTopic string
}

// Subscribe makes dispatch invoke fn for each partition of topic where group has lag
// and no live lease, as a Lambda event source mapping would: it adds the subscription to
// dispatch's STRATA_SUBSCRIPTIONS, lets dispatch invoke fn, grants fn exactly what the
// consumer library needs for this topic and group (ConsumerStatements), sets fn's
// environment when fn is a Function created in this app, and adds lag and dead-letter
// alarms. A topic and group may be subscribed once; bad names are an error and change
// nothing.
func (s *Strata) Subscribe(fn awslambda.IFunction, topic, group string, opts *SubscribeOptions) error {
	if opts == nil {
		opts = &SubscribeOptions{}
	}
	sub := deploy.Subscription{Topic: topic, Group: group, Function: *fn.FunctionName()}
	if err := sub.Validate(); err != nil {
		return fmt.Errorf("strata: subscribe: %w", err)
	}
	if opts.DeadLetterTopic != "" {
		if err := validTopic(opts.DeadLetterTopic); err != nil {
			return fmt.Errorf("strata: subscribe: dead-letter %w", err)
		}
	}
	if s.subscribed[[2]string{topic, group}] {
		return fmt.Errorf("strata: subscribe: topic %q and group %q are already subscribed", topic, group)
	}
	if fn.Role() == nil {
		return fmt.Errorf("strata: subscribe: function %s has no role to grant to (an imported function: attach ConsumerStatements to its role yourself)", *fn.Node().Path())
	}
	subs := append(s.Subscriptions(), sub)
	encoded, err := deploy.EncodeSubscriptions(subs)
	if err != nil {
		return fmt.Errorf("strata: subscribe: %w", err)
	}
	s.subscriptions = subs
	s.subscribed[[2]string{topic, group}] = true

	dispatch := s.Functions[deploy.FunctionDispatch]
	dispatch.AddEnvironment(jsii.String(deploy.EnvSubscriptions), jsii.String(encoded), nil)
	dispatch.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: &[]*string{fn.FunctionArn()},
	}))
	grantConsumer(fn, s.ConsumerStatements(topic, group, opts.DeadLetterTopic), s.granted)
	if f, ok := fn.(awslambda.Function); ok {
		for k, v := range s.ConsumerEnvironment(topic, group) {
			f.AddEnvironment(jsii.String(k), v, nil)
		}
	}
	s.observeSubscription(fn, topic, group)
	return nil
}

// grantConsumer adds a subscription's statements to fn's role. The k-th subscription of
// one function (k > 1, counted in granted by node path) gets its statement ids suffixed
// with k: one policy document must not repeat an id (cfn-lint E3510).
func grantConsumer(fn awslambda.IFunction, sts []awsiam.PolicyStatement, granted map[string]int) {
	path := *fn.Node().Path()
	granted[path]++
	k := granted[path]
	for _, st := range sts {
		if k > 1 {
			st = st.Copy(&awsiam.PolicyStatementProps{Sid: jsii.String(*st.Sid() + strconv.Itoa(k))})
		}
		fn.AddToRolePolicy(st)
	}
}

// ConsumerEnvironment is the environment the consumer library reads for topic and group.
func (s *Strata) ConsumerEnvironment(topic, group string) map[string]*string {
	return s.target().consumerEnvironment(topic, group)
}

// target is what a consumer's rights and environment name of a deployment, created in
// this app (Strata) or attached (Attached): one definition of them serves both.
type target struct {
	tableArn      func(suffix string) *string
	bucket        awss3.IBucket
	segmentPrefix string
	api           awsapigatewayv2.IHttpApi // nil without an HTTP API
	urlFunction   *string                  // the api function's ARN when it has a URL; nil otherwise
	settings      deploy.Settings          // the stores' settings (Strata.settings)
}

func (s *Strata) target() target {
	t := target{
		tableArn:      func(suffix string) *string { return s.Tables[suffix].TableArn() },
		bucket:        s.Bucket,
		segmentPrefix: s.segmentPrefix(),
		settings:      s.settings(),
	}
	if s.API != nil {
		t.api = s.API
	}
	if s.FunctionURL != nil {
		t.urlFunction = s.Functions[deploy.FunctionAPI].FunctionArn()
	}
	return t
}

func (t target) consumerEnvironment(topic, group string) map[string]*string {
	st := t.settings
	st.Topic, st.Group = topic, group
	return environment(st)
}

// ConsumerStatements are the rights of a consumer of topic in group, and nothing more:
// reads of the topic's row, high watermarks, index entries and log starts; leases and
// commits of (group, topic); the group's row; reads of the topic's segment objects; the
// group's parked rows of the topic, and appending to and reading back its parking topic. Each
// DynamoDB statement is confined to its rows by dynamodb:LeadingKeys (no Scan is granted,
// so every call names its key). With deadLetterTopic, also appending to that topic.
func (s *Strata) ConsumerStatements(topic, group, deadLetterTopic string) []awsiam.PolicyStatement {
	return s.target().consumerStatements(topic, group, deadLetterTopic)
}

func (s target) consumerStatements(topic, group, deadLetterTopic string) []awsiam.PolicyStatement {
	gt := group + "#" + topic
	parking := wire.ParkingTopic(group)
	out := []awsiam.PolicyStatement{
		// the topic's row and its parking topic's (parking and replays read it)
		s.rowStatement("ConsumerTopic", dynamo.TopicsTable, []string{"dynamodb:GetItem"}, topic, parking),
		s.rowStatement("ConsumerSequencer", dynamo.SequencerTable, tableRead, topic+"#*"),
		s.rowStatement("ConsumerIndex", dynamo.IndexTable, tableRead, topic+"#*"),
		s.rowStatement("ConsumerPartitions", dynamo.PartitionsTable, tableRead, topic),
		s.rowStatement("ConsumerLeases", dynamo.AssignmentsTable,
			[]string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"}, gt),
		s.rowStatement("ConsumerCommits", dynamo.CommitsTable,
			[]string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}, gt),
		s.rowStatement("ConsumerGroup", dynamo.GroupsTable, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, group),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:     jsii.String("ConsumerSegments"),
			Actions: jsii.Strings(objectRead...),
			Resources: &[]*string{
				s.bucket.ArnForObjects(jsii.String(s.segmentPrefix + topic + "/*")),
				s.bucket.ArnForObjects(jsii.String(s.segmentPrefix + parking + "/*")),
			},
		}),
	}
	out = append(out, s.rowStatement("ConsumerParked", dynamo.ParkedTable,
		[]string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, gt))
	// A group whose on_failure is "park" appends to its own parking topic, and a
	// released key's replay reads its records back (the topic's row, high watermarks
	// and index entries are in the append rights; its segment objects in
	// ConsumerSegments). The rights are granted whatever the group's settings say, since
	// they can change at run time.
	out = append(out, s.appendStatements("Parking", parking, false)...)

	if deadLetterTopic != "" {
		out = append(out, s.appendStatements("DeadLetter", deadLetterTopic, true)...)
	}
	return out
}

// appendStatements are exactly what an append to topic calls (pkg/store/dynamo,
// pkg/store/s3): read and seed or advance the partition's counter, claim and read
// idempotency keys, write and look up index entries, and put segment objects only where
// no object is (If-None-Match: *), untagged: a consumer function knows no maximum
// retention, so its entries carry no TTL and its objects no backstop tag (store.Expiry),
// and s3:PutObjectTagging is not granted. No delete, no transaction check, no overwrite. Without
// topicRow the topic's row is left out (a statement granting it already: policies are
// bounded in size).
func (s target) appendStatements(sid, d string, topicRow bool) []awsiam.PolicyStatement {
	var out []awsiam.PolicyStatement
	if topicRow {
		out = append(out, s.rowStatement(sid+"Topic", dynamo.TopicsTable, []string{"dynamodb:GetItem"}, d))
	}
	return append(out,
		s.rowStatement(sid+"Sequencer", dynamo.SequencerTable, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, d+"#*"),
		s.rowStatement(sid+"Index", dynamo.IndexTable, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"}, d+"#*"),
		s.rowStatement(sid+"Idempotency", dynamo.IdempotencyTable, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, d+"#*"),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String(sid + "Segments"),
			Actions:   jsii.Strings(objectWrite...),
			Resources: &[]*string{s.bucket.ArnForObjects(jsii.String(s.segmentPrefix + d + "/*"))},
			// S3 refuses a PutObject without If-None-Match under this condition:
			// the role can add segment objects, never replace one.
			Conditions: &map[string]any{"Null": map[string]any{"s3:if-none-match": "false"}},
		}),
	)
}

// rowStatement allows actions on table only for items whose partition key matches one
// of the patterns (StringLike: '*' matches any run of characters).
func (s target) rowStatement(sid, table string, actions []string, keyPatterns ...string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String(sid),
		Actions:   jsii.Strings(actions...),
		Resources: &[]*string{s.tableArn(table)},
		Conditions: &map[string]any{
			"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": keyPatterns},
		},
	})
}

// validTopic checks a topic or group name as the API does.
func validTopic(name string) error {
	return deploy.Subscription{Topic: name, Group: name, Function: "x"}.Validate()
}

// route is one method and path of the HTTP API, for execute-api grants.
type route struct{ method, path string }

// GrantProduce lets grantee create nothing but append to and describe each topic through
// the HTTP API (execute-api:Invoke on exactly those routes).
func (s *Strata) GrantProduce(grantee awsiam.IGrantable, topics ...string) (awsiam.Grant, error) {
	return s.target().grantProduce(grantee, topics...)
}

func (s target) grantProduce(grantee awsiam.IGrantable, topics ...string) (awsiam.Grant, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("strata: grant produce: no topic")
	}
	var routes []route
	for _, t := range topics {
		if err := validTopic(t); err != nil {
			return nil, fmt.Errorf("strata: grant produce: %w", err)
		}
		routes = append(routes,
			route{"POST", "/v1/topics/" + t + "/records"},
			route{"GET", "/v1/topics/" + t})
	}
	return s.grantRoutes(grantee, routes)
}

// GrantConsume lets grantee consume each topic in group through the HTTP API: describe
// and poll the topic; lease, renew, release and commit the group's partitions of it;
// join the group's members on it (heartbeat) and leave; read, write and clear the
// partitions' parked keys (the member side of on_failure "park") and append to, describe
// and poll the group's parking topic (parking, and a released key's replay); describe
// the group and read its settings (every consumer reads them when a run starts).
// Resetting the group, listing and releasing its parked keys are not included.
func (s *Strata) GrantConsume(grantee awsiam.IGrantable, group string, topics ...string) (awsiam.Grant, error) {
	return s.target().grantConsume(grantee, group, topics...)
}

func (s target) grantConsume(grantee awsiam.IGrantable, group string, topics ...string) (awsiam.Grant, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("strata: grant consume: no topic")
	}
	if err := validTopic(group); err != nil {
		return nil, fmt.Errorf("strata: grant consume: group: %w", err)
	}
	parking := "/v1/topics/" + wire.ParkingTopic(group)
	routes := []route{
		{"GET", "/v1/groups/" + group}, {"GET", "/v1/groups/" + group + "/settings"},
		{"DELETE", "/v1/groups/" + group + "/members"},
		{"GET", parking}, {"POST", parking + "/records"}, {"GET", parking + "/partitions/*/records"},
	}
	for _, t := range topics {
		if err := validTopic(t); err != nil {
			return nil, fmt.Errorf("strata: grant consume: %w", err)
		}
		p := "/v1/groups/" + group + "/topics/" + t + "/partitions/*/"
		routes = append(routes,
			route{"GET", "/v1/topics/" + t},
			route{"GET", "/v1/topics/" + t + "/partitions/*/records"},
			route{"POST", p + "lease"},
			route{"DELETE", p + "lease"},
			route{"POST", p + "commit"},
			route{"POST", "/v1/groups/" + group + "/topics/" + t + "/heartbeat"},
			route{"GET", p + "parked"},
			route{"PUT", p + "parked"},
			route{"POST", p + "parked/unpark"})
	}
	return s.grantRoutes(grantee, routes)
}

// grantRoutes lets grantee invoke routes of the HTTP API (execute-api:Invoke on each)
// and, when the api function has a URL, call that URL (which has no routes: the api's
// grants, STRATA_GRANTS, confine the caller there).
func (s target) grantRoutes(grantee awsiam.IGrantable, routes []route) (awsiam.Grant, error) {
	var g awsiam.Grant
	if s.api != nil {
		arns := make([]*string, 0, len(routes))
		for _, r := range routes {
			arns = append(arns, s.api.ArnForExecuteApi(jsii.String(r.method), jsii.String(r.path), jsii.String("*")))
		}
		g = awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
			Grantee:      grantee,
			Actions:      jsii.Strings("execute-api:Invoke"),
			ResourceArns: &arns,
		})
	}
	if s.urlFunction != nil {
		u := grantURL(grantee, s.urlFunction)
		if g == nil {
			return u, nil
		}
		return g.Combine(u), nil
	}
	if g == nil {
		return nil, fmt.Errorf("strata: grant: the deployment has no HTTP API (HttpApiId %s): grant lambda:InvokeFunctionUrl on its api function", NoHTTPAPI)
	}
	return g, nil
}
