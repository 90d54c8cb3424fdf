package strata

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/pkg/deploy"
)

// ManagedInstances runs the api function on Lambda Managed Instances: many invocations
// share one execution environment, so concurrent appends coalesce through the log's group
// commit into fewer segment objects and commits (cheaper per append), at the price of
// instances that run while the deployment is idle (docs/TRADEOFFS.md). The capacity
// provider lives in a VPC of its own with isolated subnets only (no NAT gateway, nothing
// billed idle) and gateway endpoints for S3 and DynamoDB, the only services the api calls,
// and an interface endpoint for CloudWatch Logs, where the instances send its logs; their
// security group lets HTTPS out to those endpoints only.
// Zero fields mean the defaults.
type ManagedInstances struct {
	// MaxVCPUs caps the capacity provider's scaling. Default 16.
	MaxVCPUs int
	// TargetCPUUtilization, when set (1–100), replaces the automatic scaling with CPU
	// target tracking at that percentage.
	TargetCPUUtilization float64
	// PerEnvironmentMaxConcurrency is how many invocations one execution environment
	// runs at once (AWS_LAMBDA_MAX_CONCURRENCY in the function). Default 32.
	PerEnvironmentMaxConcurrency int
	// MemoryGiBPerVCPU of an execution environment, 2 to 8. Default 2.
	MemoryGiBPerVCPU float64
	// MinEnvironments and MaxEnvironments bound the execution environments of the
	// published version. Defaults: 1, and what ExpectedRequestsPerSecond and
	// ExpectedBurstRequests need (deploy.ManagedEnvironments: twice the invocations in
	// flight at that rate, each held the group commit window plus
	// deploy.APIInvocationBound, or in a burst, over PerEnvironmentMaxConcurrency; at
	// least 4).
	MinEnvironments, MaxEnvironments int
	// ExpectedRequestsPerSecond is the append request rate the api function is sized
	// for (MaxEnvironments, and MaxVCPUs to fit them). Default
	// deploy.DefaultExpectedRequestsPerSecond (1,000: 1,000 SDK producers at linger 1 s).
	ExpectedRequestsPerSecond float64
	// ExpectedBurstRequests is the most append requests that arrive at once: with SDK
	// producers aligned to the clock (client.ProducerConfig.AlignLinger), a slot's
	// requests, the fleet's requests per linger over AlignSlots. 0: none beyond the
	// rate's.
	ExpectedBurstRequests float64
	// MaxAZs is how many Availability Zones the VPC spans. Default 2.
	MaxAZs int
}

// withDefaults fills the zero fields; window is the api function's group commit window
// (0 or less: off) and memoryMiB its memory, which with MemoryGiBPerVCPU sets the vCPUs
// of one execution environment.
func (m *ManagedInstances) withDefaults(window time.Duration, memoryMiB int) error {
	var errs []error
	if m.ExpectedRequestsPerSecond < 0 {
		errs = append(errs, fmt.Errorf("strata: ManagedInstances.ExpectedRequestsPerSecond = %v, want at least 0", m.ExpectedRequestsPerSecond))
	}
	if m.ExpectedBurstRequests < 0 {
		errs = append(errs, fmt.Errorf("strata: ManagedInstances.ExpectedBurstRequests = %v, want at least 0", m.ExpectedBurstRequests))
	}
	if m.ExpectedRequestsPerSecond == 0 {
		m.ExpectedRequestsPerSecond = deploy.DefaultExpectedRequestsPerSecond
	}
	if m.MemoryGiBPerVCPU == 0 {
		m.MemoryGiBPerVCPU = 2
	}
	if m.PerEnvironmentMaxConcurrency == 0 {
		m.PerEnvironmentMaxConcurrency = deploy.DefaultPerEnvironmentConcurrency
	}
	sized := m.MaxEnvironments == 0
	if sized {
		m.MaxEnvironments = deploy.ManagedEnvironments(m.ExpectedRequestsPerSecond, window, m.PerEnvironmentMaxConcurrency, m.ExpectedBurstRequests)
	}
	if m.MaxVCPUs == 0 {
		perEnv := math.Max(1, math.Ceil(float64(memoryMiB)/1024/m.MemoryGiBPerVCPU))
		m.MaxVCPUs = max(16, int(perEnv)*m.MaxEnvironments)
	}
	def := func(v *int, d, lo, hi int, name string) {
		if *v == 0 {
			*v = d
		}
		if *v < lo || *v > hi {
			errs = append(errs, fmt.Errorf("strata: ManagedInstances.%s = %d, want %d to %d", name, *v, lo, hi))
		}
	}
	def(&m.MaxVCPUs, 16, 2, 15000, "MaxVCPUs")
	def(&m.PerEnvironmentMaxConcurrency, deploy.DefaultPerEnvironmentConcurrency, 1, 1600, "PerEnvironmentMaxConcurrency")
	def(&m.MinEnvironments, 1, 0, 15000, "MinEnvironments")
	def(&m.MaxEnvironments, deploy.DefaultMaxEnvironments, 1, 15000, "MaxEnvironments")
	def(&m.MaxAZs, 2, 1, 6, "MaxAZs")
	if sized && m.MaxEnvironments > 15000 {
		errs = append(errs, fmt.Errorf("strata: ManagedInstances.ExpectedRequestsPerSecond = %v needs %d execution environments, more than 15000", m.ExpectedRequestsPerSecond, m.MaxEnvironments))
	}
	if m.MemoryGiBPerVCPU < 2 || m.MemoryGiBPerVCPU > 8 {
		errs = append(errs, fmt.Errorf("strata: ManagedInstances.MemoryGiBPerVCPU = %v, want 2 to 8", m.MemoryGiBPerVCPU))
	}
	if m.TargetCPUUtilization < 0 || m.TargetCPUUtilization > 100 {
		errs = append(errs, fmt.Errorf("strata: ManagedInstances.TargetCPUUtilization = %v, want 1 to 100", m.TargetCPUUtilization))
	}
	if m.MinEnvironments > m.MaxEnvironments {
		errs = append(errs, errors.New("strata: ManagedInstances.MinEnvironments exceeds MaxEnvironments"))
	}
	return errors.Join(errs...)
}

// ManagedAPI is what the ManagedInstances option creates.
type ManagedAPI struct {
	VPC              awsec2.Vpc
	SecurityGroup    awsec2.SecurityGroup
	CapacityProvider awslambda.CapacityProvider
}

func (s *Strata) newCapacityProvider(m ManagedInstances) {
	scope := constructs.NewConstruct(s, jsii.String("ManagedInstances"))
	vpc := awsec2.NewVpc(scope, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:      jsii.Number(float64(m.MaxAZs)),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name:       jsii.String("isolated"),
			SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED,
			CidrMask:   jsii.Number(20),
		}},
		GatewayEndpoints: &map[string]*awsec2.GatewayVpcEndpointOptions{
			"S3":       {Service: awsec2.GatewayVpcEndpointAwsService_S3()},
			"DynamoDB": {Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB()},
		},
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	})
	sg := awsec2.NewSecurityGroup(scope, jsii.String("Instances"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Strata api managed instances: HTTPS out to the VPC endpoints of S3, DynamoDB and CloudWatch Logs only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	https := awsec2.Port_Tcp(jsii.Number(443))
	// The gateway endpoints are reached through their services' AWS-managed prefix
	// lists, whose ids CloudFormation has no attribute for: looked up at deploy time.
	for _, svc := range []string{"s3", "dynamodb"} {
		sg.AddEgressRule(awsec2.Peer_PrefixList(managedPrefixList(scope, svc, s.props.SystemLogLevel)), https,
			jsii.String("HTTPS to "+svc+" (gateway endpoint)"), nil)
	}
	// The instances send the function's logs to CloudWatch Logs: an interface endpoint,
	// reached through its own security group.
	endpoints := awsec2.NewSecurityGroup(scope, jsii.String("Endpoints"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Strata api managed instances: the interface endpoints, HTTPS in from the instances"),
		AllowAllOutbound: jsii.Bool(false),
	})
	vpc.AddInterfaceEndpoint(jsii.String("Logs"), &awsec2.InterfaceVpcEndpointOptions{
		Service:           awsec2.InterfaceVpcEndpointAwsService_CLOUDWATCH_LOGS(),
		PrivateDnsEnabled: jsii.Bool(true),
		SecurityGroups:    &[]awsec2.ISecurityGroup{endpoints},
		Open:              jsii.Bool(false),
	})
	endpoints.AddIngressRule(sg, https, jsii.String("HTTPS from the api instances"), nil)
	sg.AddEgressRule(endpoints, https, jsii.String("HTTPS to CloudWatch Logs (interface endpoint)"), nil)
	scaling := awslambda.ScalingOptions_Auto()
	if m.TargetCPUUtilization > 0 {
		scaling = awslambda.ScalingOptions_Manual(&[]awslambda.TargetTrackingScalingPolicy{
			awslambda.TargetTrackingScalingPolicy_CpuUtilization(jsii.Number(m.TargetCPUUtilization)),
		})
	}
	subnets := vpc.IsolatedSubnets()
	cp := awslambda.NewCapacityProvider(scope, jsii.String("CapacityProvider"), &awslambda.CapacityProviderProps{
		Subnets:        subnets,
		SecurityGroups: &[]awsec2.ISecurityGroup{sg},
		Architectures:  &[]awslambda.Architecture{awslambda.Architecture_ARM_64()},
		MaxVCpuCount:   jsii.Number(float64(m.MaxVCPUs)),
		ScalingOptions: scaling,
	})
	cp.AddFunction(s.Functions[deploy.FunctionAPI], &awslambda.CapacityProviderFunctionOptions{
		PerExecutionEnvironmentMaxConcurrency: jsii.Number(float64(m.PerEnvironmentMaxConcurrency)),
		ExecutionEnvironmentMemoryGiBPerVCpu:  jsii.Number(m.MemoryGiBPerVCPU),
		LatestPublishedScalingConfig: &awslambda.LatestPublishedScalingConfig{
			MinExecutionEnvironments: jsii.Number(float64(m.MinEnvironments)),
			MaxExecutionEnvironments: jsii.Number(float64(m.MaxEnvironments)),
		},
	})
	s.Managed = &ManagedAPI{VPC: vpc, SecurityGroup: sg, CapacityProvider: cp}
}

// managedPrefixList is the id of the AWS-managed prefix list of service ("s3",
// "dynamodb") in the stack's region, read by a custom resource at deploy time
// (ec2:DescribeManagedPrefixLists, which names no resource). The custom resource's
// provider function logs at the stack's system log level like every other function.
func managedPrefixList(scope constructs.Construct, service string, level SystemLogLevel) *string {
	call := &customresources.AwsSdkCall{
		Service: jsii.String("EC2"),
		Action:  jsii.String("describeManagedPrefixLists"),
		Parameters: map[string]any{
			"Filters": []map[string]any{{
				"Name":   "prefix-list-name",
				"Values": []*string{awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("com.amazonaws."), awscdk.Aws_REGION(), jsii.String("." + service)})},
			}},
		},
		PhysicalResourceId: customresources.PhysicalResourceId_Of(jsii.String("strata-prefix-list-" + service)),
		OutputPaths:        jsii.Strings("PrefixLists.0.PrefixListId"),
	}
	cr := customresources.NewAwsCustomResource(scope, jsii.String("PrefixList-"+service), &customresources.AwsCustomResourceProps{
		OnCreate:            call,
		OnUpdate:            call,
		InstallLatestAwsSdk: jsii.Bool(false),
		Policy: customresources.AwsCustomResourcePolicy_FromSdkCalls(&customresources.SdkCallsPolicyOptions{
			Resources: customresources.AwsCustomResourcePolicy_ANY_RESOURCE(),
		}),
	})
	// The provider is a singleton function of the stack whose props CDK does not pass
	// on: its logging config is set on the CloudFormation resource.
	if p := awscdk.Stack_Of(scope).Node().TryFindChild(jsii.String(customResourceProvider)); p != nil {
		if fn, ok := p.Node().DefaultChild().(awscdk.CfnResource); ok {
			fn.AddPropertyOverride(jsii.String("LoggingConfig.LogFormat"), jsii.String("JSON"))
			fn.AddPropertyOverride(jsii.String("LoggingConfig.SystemLogLevel"), jsii.String(string(level)))
		}
	}
	return cr.GetResponseField(jsii.String("PrefixLists.0.PrefixListId"))
}

// customResourceProvider is the construct id, in the stack, of the singleton function
// every AwsCustomResource of the stack runs on ("AWS" and its fixed uuid).
const customResourceProvider = "AWS679f53fac002430cb0da5b7982bd2287"
