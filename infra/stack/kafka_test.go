package stack_test

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stratalog/strata/infra/internal/tmpl"
	"github.com/stratalog/strata/infra/strata"
	"github.com/stratalog/strata/pkg/deploy"
)

// gatewayContext is the context of the stack with the Kafka gateway and its TLS
// listener.
var gatewayContext = map[string]any{
	"strata:kafkaGateway":        "true",
	"strata:kafkaCertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/0f8e3a5c-1111-2222-3333-444455556666",
	"strata:kafkaHost":           "kafka.example.com",
}

// gatewayResource returns the one resource of typ in gwTpl.
func gatewayResource(t *testing.T, typ string) (string, map[string]any) {
	t.Helper()
	ids := gwTpl.OfType(typ)
	if len(ids) != 1 {
		t.Fatalf("%s: %v, want one", typ, ids)
	}
	return ids[0], gwTpl.Resources[ids[0]].Properties
}

// container is the gateway's container definition.
func container(t *testing.T) map[string]any {
	t.Helper()
	_, task := gatewayResource(t, "AWS::ECS::TaskDefinition")
	defs := asList(task["ContainerDefinitions"])
	if len(defs) != 1 {
		t.Fatalf("container definitions %v, want one", defs)
	}
	return defs[0].(map[string]any)
}

// TestKafkaGatewayOnlyWhenAsked: the default stack has no gateway resources.
func TestKafkaGatewayOnlyWhenAsked(t *testing.T) {
	for _, typ := range []string{"AWS::ECS::Service", "AWS::ECS::TaskDefinition", "AWS::ElasticLoadBalancingV2::LoadBalancer", "AWS::EC2::VPC"} {
		if ids := tpl.OfType(typ); len(ids) != 0 {
			t.Errorf("default stack has %s %v", typ, ids)
		}
	}
}

// TestKafkaGatewayService: Fargate on arm64, at least two tasks over subnets in two
// Availability Zones, rolled back on a failed deployment, scaled on CPU between the
// bounds, running `strata kafka` against the stack's stores and advertising the
// listener's name and port.
func TestKafkaGatewayService(t *testing.T) {
	_, svc := gatewayResource(t, "AWS::ECS::Service")
	if svc["LaunchType"] != "FARGATE" || svc["DesiredCount"] != float64(2) || svc["AvailabilityZoneRebalancing"] != "ENABLED" {
		t.Errorf("service %v", svc)
	}
	if dc := js(svc["DeploymentConfiguration"]); !strings.Contains(dc, `"Rollback":true`) || !strings.Contains(dc, `"MinimumHealthyPercent":100`) {
		t.Errorf("deployment configuration %s", dc)
	}
	subnets := asList(svc["NetworkConfiguration"].(map[string]any)["AwsvpcConfiguration"].(map[string]any)["Subnets"])
	azs := map[string]bool{}
	for _, sn := range subnets {
		id, _ := tmpl.GetAtt(sn, "") // a Ref
		if id == "" {
			id = strings.TrimSuffix(strings.TrimPrefix(tmpl.Join(sn), "<Ref:"), ">")
		}
		azs[tmpl.Join(gwTpl.Resources[id].Properties["AvailabilityZone"])] = true
	}
	if len(subnets) != 2 || len(azs) != 2 {
		t.Errorf("subnets %v in zones %v, want two zones", subnets, azs)
	}
	_, task := gatewayResource(t, "AWS::ECS::TaskDefinition")
	if rp := js(task["RuntimePlatform"]); rp != `{"CpuArchitecture":"ARM64","OperatingSystemFamily":"LINUX"}` {
		t.Errorf("runtime platform %s", rp)
	}
	if !slices.Equal(asStrings(task["RequiresCompatibilities"]), []string{"FARGATE"}) || task["NetworkMode"] != "awsvpc" {
		t.Errorf("task %v %v", task["RequiresCompatibilities"], task["NetworkMode"])
	}
	c := container(t)
	cmd := strings.Join(asJoined(c["Command"]), " ")
	if want := "kafka --backend aws --emf --listen 0.0.0.0:9092 --advertise kafka.example.com:9094"; cmd != want {
		t.Errorf("command %q, want %q", cmd, want)
	}
	if c["ReadonlyRootFilesystem"] != true {
		t.Errorf("root filesystem writable")
	}
	_, target := gatewayResource(t, "AWS::ApplicationAutoScaling::ScalableTarget")
	if target["MinCapacity"] != float64(2) || target["MaxCapacity"] != float64(8) {
		t.Errorf("scalable target %v", target)
	}
	_, policy := gatewayResource(t, "AWS::ApplicationAutoScaling::ScalingPolicy")
	if p := js(policy["TargetTrackingScalingPolicyConfiguration"]); !strings.Contains(p, "ECSServiceAverageCPUUtilization") || !strings.Contains(p, `"TargetValue":60`) {
		t.Errorf("scaling policy %s", p)
	}
}

// TestKafkaGatewayEnvironment: the container's environment is the api function's
// store and topic settings (every variable one deploy.Settings reads, the same values),
// without the api's authorization and group commit, which the gateway does not read.
func TestKafkaGatewayEnvironment(t *testing.T) {
	read := map[string]bool{}
	for _, name := range deploy.SettingNames() {
		read[name] = true
	}
	got := map[string]string{}
	for _, e := range asList(container(t)["Environment"]) {
		m := e.(map[string]any)
		got[m["Name"].(string)] = tmpl.Join(m["Value"])
	}
	id, r, err := gwTpl.Find("AWS::Lambda::Function", "Description", "Strata api")
	if err != nil {
		t.Fatal(err)
	}
	vars := r.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	want := map[string]string{}
	for k, v := range vars {
		if k == deploy.EnvGrants || k == deploy.EnvEveryPrincipalAdmin || k == deploy.EnvGroupCommitWindow || k == deploy.EnvGroupCommitBudget {
			continue
		}
		want[k] = tmpl.Join(v)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gateway environment %v, want the api's (%s) store settings %v", got, id, want)
	}
	for k := range got {
		if !read[k] {
			t.Errorf("the gateway gets %s, which no code reads", k)
		}
	}
	if got[deploy.EnvBucket] == "" || got[deploy.EnvTablePrefix] != "Strata-" {
		t.Errorf("storage settings %v", got)
	}
}

// TestKafkaGatewayLoadBalancer: an internal NLB whose TLS listener (the context's
// certificate, a TLS 1.2+ policy) forwards TCP to the tasks' port, health-checked over
// TCP; its security group lets the listener's port in from the VPC and the gateway's
// port out to the tasks, whose group lets in only the load balancer.
func TestKafkaGatewayLoadBalancer(t *testing.T) {
	_, lb := gatewayResource(t, "AWS::ElasticLoadBalancingV2::LoadBalancer")
	if lb["Type"] != "network" || lb["Scheme"] != "internal" {
		t.Errorf("load balancer %v %v, want an internal network load balancer", lb["Type"], lb["Scheme"])
	}
	_, l := gatewayResource(t, "AWS::ElasticLoadBalancingV2::Listener")
	if l["Protocol"] != "TLS" || l["Port"] != float64(9094) || !strings.Contains(js(l["Certificates"]), gatewayContext["strata:kafkaCertificateArn"].(string)) {
		t.Errorf("listener %v", l)
	}
	if p, _ := l["SslPolicy"].(string); !strings.Contains(p, "TLS13") {
		t.Errorf("listener policy %q", p)
	}
	_, tg := gatewayResource(t, "AWS::ElasticLoadBalancingV2::TargetGroup")
	if tg["Protocol"] != "TCP" || tg["Port"] != float64(strata.GatewayPort) || tg["TargetType"] != "ip" || tg["HealthCheckProtocol"] != "TCP" {
		t.Errorf("target group %v", tg)
	}
	var rules []string
	for _, typ := range []string{"AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress"} {
		for _, id := range gwTpl.OfType(typ) {
			p := gwTpl.Resources[id].Properties
			peer := tmpl.Join(p["SourceSecurityGroupId"]) + tmpl.Join(p["DestinationSecurityGroupId"])
			rules = append(rules, fmt.Sprintf("%s %s %s %v", typ[len("AWS::EC2::SecurityGroup"):], short(tmpl.Join(p["GroupId"])), short(peer), p["FromPort"]))
		}
	}
	for _, id := range gwTpl.OfType("AWS::EC2::SecurityGroup") {
		p := gwTpl.Resources[id].Properties
		for _, key := range []string{"SecurityGroupIngress", "SecurityGroupEgress"} {
			for _, r := range asList(p[key]) {
				m := r.(map[string]any)
				cidr := tmpl.Join(m["CidrIp"])
				if cidr == "255.255.255.255/32" {
					continue // CDK's "no egress" placeholder
				}
				if strings.Contains(cidr, "Vpc") {
					cidr = "vpc"
				}
				rules = append(rules, fmt.Sprintf("%s %s %s %v", strings.TrimPrefix(key, "SecurityGroup"), short(id), cidr, m["FromPort"]))
			}
		}
	}
	sort.Strings(rules)
	want := []string{
		"Egress LoadBalancerSG TaskSG 9092",
		"Egress TaskSG 0.0.0.0/0 443",
		"Ingress LoadBalancerSG vpc 9094",
		"Ingress TaskSG LoadBalancerSG 9092",
	}
	if !slices.Equal(rules, want) {
		t.Errorf("security rules:\n got %q\nwant %q", rules, want)
	}
}

// short names a security group by the construct id in its logical id.
func short(id string) string {
	for _, n := range []string{"LoadBalancerSG", "TaskSG"} {
		if strings.Contains(id, n) {
			return n
		}
	}
	return id
}

// TestKafkaGatewayRole: the tasks' role has exactly the api function's statements on
// the tables and the bucket (the same actions on the same resources), nothing more:
// not even the api's log statement, since the awslogs driver writes with the
// execution role, which may pull the image and write the gateway's own log group only.
func TestKafkaGatewayRole(t *testing.T) {
	render := func(sts []tmpl.Statement) []string {
		var out []string
		for _, st := range sts {
			var res []string
			for _, r := range st.Resources {
				res = append(res, tmpl.Join(r))
			}
			acts := slices.Clone(st.Actions)
			sort.Strings(acts)
			out = append(out, fmt.Sprintf("%s %s on %s %s", st.Effect, strings.Join(acts, ","), strings.Join(res, ","), js(st.Condition)))
		}
		sort.Strings(out)
		return out
	}
	_, api, err := gwTpl.Find("AWS::Lambda::Function", "Description", "Strata api")
	if err != nil {
		t.Fatal(err)
	}
	apiRole, _ := tmpl.GetAtt(api.Properties["Role"], "Arn")
	apiSts, _, err := gwTpl.RoleStatements(apiRole)
	if err != nil {
		t.Fatal(err)
	}
	apiSts = slices.DeleteFunc(apiSts, func(st tmpl.Statement) bool { return st.Sid == "OwnLogs" })
	_, task := gatewayResource(t, "AWS::ECS::TaskDefinition")
	taskRole, _ := tmpl.GetAtt(task["TaskRoleArn"], "Arn")
	execRole, _ := tmpl.GetAtt(task["ExecutionRoleArn"], "Arn")
	taskSts, managed, err := gwTpl.RoleStatements(taskRole)
	if err != nil {
		t.Fatal(err)
	}
	if len(managed) > 0 {
		t.Errorf("task role managed policies %v", managed)
	}
	if got, want := render(taskSts), render(apiSts); !slices.Equal(got, want) {
		t.Errorf("task role:\n got %q\nwant the api's %q", got, want)
	}
	if tr := js(gwTpl.Resources[taskRole].Properties["AssumeRolePolicyDocument"]); !strings.Contains(tr, "ecs-tasks.amazonaws.com") {
		t.Errorf("task role trust %s", tr)
	}
	execSts, _, err := gwTpl.RoleStatements(execRole)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range execSts {
		acts := slices.Clone(st.Actions)
		sort.Strings(acts)
		var res []string
		for _, r := range st.Resources {
			j := tmpl.Join(r)
			switch {
			case strings.Contains(j, "KafkaGatewayLogs"):
				j = "the gateway's log group"
			case strings.Contains(j, "ecr") || strings.Contains(j, "repository/"):
				j = "the assets repository"
			}
			res = append(res, j)
		}
		got = append(got, strings.Join(acts, ",")+" on "+strings.Join(res, ","))
	}
	sort.Strings(got)
	want := []string{
		"ecr:BatchCheckLayerAvailability,ecr:BatchGetImage,ecr:GetDownloadUrlForLayer on the assets repository",
		"ecr:GetAuthorizationToken on *", // it names no resource
		"logs:CreateLogStream,logs:PutLogEvents on the gateway's log group",
	}
	if !slices.Equal(got, want) {
		t.Errorf("execution role:\n got %q\nwant %q", got, want)
	}
}

// TestKafkaGatewayAlarms: beside the deployment's alarms, the gateway's server errors
// (its EMF metric, over every API) and unhealthy tasks, missing data not breaching,
// with the deployment's alarm conventions; its dashboard row.
func TestKafkaGatewayAlarms(t *testing.T) {
	got := map[string]float64{}
	for _, id := range gwTpl.OfType("AWS::CloudWatch::Alarm") {
		p := gwTpl.Resources[id].Properties
		if p["TreatMissingData"] != "notBreaching" {
			t.Errorf("alarm %s: %v", id, p["TreatMissingData"])
		}
		got[fmt.Sprintf("%v/%v %v", p["Namespace"], p["MetricName"], p["Statistic"])] = p["Threshold"].(float64)
	}
	for k, v := range map[string]float64{
		"Strata/" + deploy.MetricKafkaServerErrors + " Sum": 1,
		"AWS/NetworkELB/UnHealthyHostCount Maximum":         1,
		"Strata/" + deploy.MetricAppendLatency + " <nil>":   1, // the appends through the gateway too (p99)
	} {
		if got[k] != v {
			t.Errorf("alarm %s: threshold %v, want %v (alarms %v)", k, got[k], v, got)
		}
	}
	if n, base := len(gwTpl.OfType("AWS::CloudWatch::Alarm")), len(tpl.OfType("AWS::CloudWatch::Alarm")); n != base+2 {
		t.Errorf("%d alarms, want the default stack's %d and 2", n, base)
	}
	_, dash := gatewayResource(t, "AWS::CloudWatch::Dashboard")
	body := tmpl.Join(dash["DashboardBody"])
	for _, w := range []string{deploy.MetricKafkaRequests, deploy.MetricKafkaServerErrors, deploy.MetricKafkaRequestDurationMax, "CPUUtilization", "UnHealthyHostCount"} {
		if !strings.Contains(body, w) {
			t.Errorf("dashboard lacks %s", w)
		}
	}
}

// TestLogGroupsRetained: every log group of either stack, the gateway's included,
// expires its events (the construct's LogRetention, two weeks by default).
func TestLogGroupsRetained(t *testing.T) {
	for name, tp := range map[string]*tmpl.Template{"default": tpl, "gateway": gwTpl} {
		ids := tp.OfType("AWS::Logs::LogGroup")
		if len(ids) == 0 {
			t.Errorf("%s: no log groups", name)
		}
		for _, id := range ids {
			if d := tp.Resources[id].Properties["RetentionInDays"]; d != float64(14) {
				t.Errorf("%s: log group %s retention %v, want 14 days", name, id, d)
			}
		}
	}
}

// TestKafkaGatewayOutputs: the bootstrap address and the load balancer's DNS name,
// which the certificate's name must point at.
func TestKafkaGatewayOutputs(t *testing.T) {
	if b := tmpl.Join(gwTpl.Outputs["KafkaBootstrap"].Value); b != "kafka.example.com:9094" {
		t.Errorf("KafkaBootstrap %q", b)
	}
	if d := tmpl.Join(gwTpl.Outputs["KafkaLoadBalancerDns"].Value); !strings.Contains(d, "DNSName") {
		t.Errorf("KafkaLoadBalancerDns %q", d)
	}
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asList(v) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// asJoined renders each element of a list (tokens joined as tmpl.Join does).
func asJoined(v any) []string {
	var out []string
	for _, x := range asList(v) {
		out = append(out, tmpl.Join(x))
	}
	return out
}
