package strata

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	elb "github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/pkg/deploy"
)

// GatewayAsset is the directory under Props.AssetDir that holds the Kafka gateway's
// container image context: the strata binary (linux/arm64) and its Dockerfile, which
// scripts/build-functions.sh writes. Synthesizing only stages the directory; `cdk
// deploy` builds and pushes the image (the one step that needs a Docker engine).
const GatewayAsset = "kafka-gateway"

// GatewayPort is the port the gateway listens on inside its task.
const GatewayPort = 9092

// KafkaGateway runs the Kafka-protocol gateway (`strata kafka`, docs/KAFKA.md) as an
// ECS Fargate service on arm64, at least two tasks spread over two Availability Zones,
// scaled on CPU, behind an internal Network Load Balancer: the gateway has no client
// authentication yet, so it is reachable from inside its VPC only. Zero fields mean the
// defaults.
type KafkaGateway struct {
	// CertificateArn is the ACM certificate of the load balancer's TLS listener (port
	// 9094 by default), which terminates TLS and forwards plain TCP to the tasks. Without
	// one the listener is plain TCP (port 9092 by default) and synthesis warns: records
	// then cross the VPC unencrypted.
	CertificateArn string
	// Host is the name clients connect to, which every gateway advertises (Metadata,
	// FindCoordinator) with the listener's port. Required with a certificate (the name
	// the certificate is for, pointed at the load balancer's DNS name, output
	// KafkaLoadBalancerDns); default the load balancer's DNS name.
	Host string
	// Port is the listener's port. Default 9094 with a certificate, 9092 without.
	Port int
	// MinTasks and MaxTasks bound the service's autoscaling. Defaults 2 and 8; MinTasks
	// is at least 2 (one per Availability Zone).
	MinTasks, MaxTasks int
	// TargetCPUPercent is the average CPU utilization the scaling tracks. Default 60.
	TargetCPUPercent int
	// CPU (in ECS units, 1024 = 1 vCPU) and MemoryMiB of a task. Defaults 1024 and 2048.
	CPU, MemoryMiB int
	// ClientCIDR is the address range allowed to reach the listener. Default the VPC's.
	ClientCIDR string
}

func (k *KafkaGateway) withDefaults() error {
	var errs []error
	def := func(v *int, d, lo, hi int, name string) {
		if *v == 0 {
			*v = d
		}
		if *v < lo || *v > hi {
			errs = append(errs, fmt.Errorf("strata: KafkaGateway.%s = %d, want %d to %d", name, *v, lo, hi))
		}
	}
	port := 9092
	if k.CertificateArn != "" {
		port = 9094
		if k.Host == "" {
			errs = append(errs, errors.New("strata: KafkaGateway.Host is required with a CertificateArn: the name the certificate is for, which clients connect to and the gateway advertises"))
		}
	}
	def(&k.Port, port, 1, 65535, "Port")
	def(&k.MinTasks, 2, 2, 1000, "MinTasks")
	def(&k.MaxTasks, 8, 2, 1000, "MaxTasks")
	def(&k.TargetCPUPercent, 60, 10, 90, "TargetCPUPercent")
	def(&k.CPU, 1024, 256, 16384, "CPU")
	def(&k.MemoryMiB, 2048, 512, 122880, "MemoryMiB")
	if k.MinTasks > k.MaxTasks {
		errs = append(errs, errors.New("strata: KafkaGateway.MinTasks exceeds MaxTasks"))
	}
	return errors.Join(errs...)
}

// Gateway is what the KafkaGateway option creates.
type Gateway struct {
	VPC          awsec2.Vpc
	Cluster      awsecs.Cluster
	Task         awsecs.FargateTaskDefinition
	Service      awsecs.FargateService
	LoadBalancer elb.NetworkLoadBalancer
	Listener     elb.NetworkListener
	// Role is the tasks' role: the api function's table and bucket statements, nothing
	// more (its logs go through the execution role, as the awslogs driver writes them).
	Role awsiam.Role
	Logs awslogs.LogGroup
	// Bootstrap is the host:port clients bootstrap from and the gateway advertises.
	Bootstrap *string
}

// newKafkaGateway creates the gateway's VPC, service, load balancer, scaling, alarms
// and dashboard row.
func (s *Strata) newKafkaGateway(k KafkaGateway) {
	scope := constructs.NewConstruct(s, jsii.String("KafkaGateway"))
	// Public subnets only, no NAT gateway: the tasks reach ECR and CloudWatch Logs over
	// the internet (their security group admits no one but the load balancer), S3 and
	// DynamoDB through gateway endpoints.
	vpc := awsec2.NewVpc(scope, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name:       jsii.String("public"),
			SubnetType: awsec2.SubnetType_PUBLIC,
			CidrMask:   jsii.Number(20),
		}},
		GatewayEndpoints: &map[string]*awsec2.GatewayVpcEndpointOptions{
			"S3":       {Service: awsec2.GatewayVpcEndpointAwsService_S3()},
			"DynamoDB": {Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB()},
		},
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	})
	clients := k.ClientCIDR
	if clients == "" {
		clients = *vpc.VpcCidrBlock()
	}
	lbSG := awsec2.NewSecurityGroup(scope, jsii.String("LoadBalancerSG"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Strata Kafka gateway load balancer: the listener from the client range, the task port out"),
		AllowAllOutbound: jsii.Bool(false),
	})
	lbSG.AddIngressRule(awsec2.Peer_Ipv4(jsii.String(clients)), awsec2.Port_Tcp(jsii.Number(float64(k.Port))), jsii.String("Kafka clients"), nil)
	taskSG := awsec2.NewSecurityGroup(scope, jsii.String("TaskSG"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Strata Kafka gateway tasks: the gateway port from the load balancer only, HTTPS out to AWS"),
		AllowAllOutbound: jsii.Bool(false),
	})
	gatewayPort := awsec2.Port_Tcp(jsii.Number(GatewayPort))
	taskSG.AddIngressRule(lbSG, gatewayPort, jsii.String("Kafka from the load balancer (traffic and health checks)"), nil)
	lbSG.AddEgressRule(taskSG, gatewayPort, jsii.String("Kafka to the gateway tasks"), nil)
	taskSG.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String("HTTPS to S3, DynamoDB, ECR and CloudWatch Logs"), nil)

	logs := awslogs.NewLogGroup(scope, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention:     s.props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(scope, jsii.String("TaskRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("ecs-tasks.amazonaws.com"), nil),
		Description: jsii.String("Strata Kafka gateway tasks: the api function's table and bucket rights, nothing more"),
	})
	for _, st := range s.tableStatements(deploy.FunctionAPI) {
		role.AddToPrincipalPolicy(st)
	}
	// The api's dirty-ratio trigger: its appends may ask the compaction function for a
	// pass, as the api function's do.
	compactFn := s.Functions[deploy.FunctionCompact]
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("CompactTrigger"),
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: &[]*string{compactFn.FunctionArn()},
	}))
	task := awsecs.NewFargateTaskDefinition(scope, jsii.String("Task"), &awsecs.FargateTaskDefinitionProps{
		Cpu:            jsii.Number(float64(k.CPU)),
		MemoryLimitMiB: jsii.Number(float64(k.MemoryMiB)),
		TaskRole:       role,
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
	})
	nlb := elb.NewNetworkLoadBalancer(scope, jsii.String("LoadBalancer"), &elb.NetworkLoadBalancerProps{
		Vpc:              vpc,
		InternetFacing:   jsii.Bool(false),
		CrossZoneEnabled: jsii.Bool(true),
		SecurityGroups:   &[]awsec2.ISecurityGroup{lbSG},
	})
	host := jsii.String(k.Host)
	if k.Host == "" {
		host = nlb.LoadBalancerDnsName()
	}
	bootstrap := awscdk.Fn_Join(jsii.String(":"), &[]*string{host, jsii.String(strconv.Itoa(k.Port))})
	gst := s.apiSettings(false)
	gst.CompactFunction = *compactFn.FunctionName()
	env := environment(gst)
	task.AddContainer(jsii.String("gateway"), &awsecs.ContainerDefinitionOptions{
		Image: awsecs.ContainerImage_FromAsset(jsii.String(filepath.Join(s.props.AssetDir, GatewayAsset)), &awsecs.AssetImageProps{
			Platform: awsecrassets.Platform_LINUX_ARM64(),
		}),
		Command: jsii.Strings("kafka", "--backend", "aws", "--emf",
			"--listen", "0.0.0.0:"+strconv.Itoa(GatewayPort), "--advertise", *bootstrap),
		Environment:            &env,
		Essential:              jsii.Bool(true),
		ReadonlyRootFilesystem: jsii.Bool(true),
		PortMappings:           &[]*awsecs.PortMapping{{ContainerPort: jsii.Number(GatewayPort), Protocol: awsecs.Protocol_TCP}},
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{
			StreamPrefix: jsii.String("kafka"),
			LogGroup:     logs,
		}),
		StopTimeout: awscdk.Duration_Seconds(jsii.Number(30)),
	})
	cluster := awsecs.NewCluster(scope, jsii.String("Cluster"), &awsecs.ClusterProps{Vpc: vpc})
	service := awsecs.NewFargateService(scope, jsii.String("Service"), &awsecs.FargateServiceProps{
		Cluster:                     cluster,
		TaskDefinition:              task,
		DesiredCount:                jsii.Number(float64(k.MinTasks)),
		MinHealthyPercent:           jsii.Number(100),
		MaxHealthyPercent:           jsii.Number(200),
		AssignPublicIp:              jsii.Bool(true),
		VpcSubnets:                  &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PUBLIC},
		SecurityGroups:              &[]awsec2.ISecurityGroup{taskSG},
		CircuitBreaker:              &awsecs.DeploymentCircuitBreaker{Rollback: jsii.Bool(true)},
		AvailabilityZoneRebalancing: awsecs.AvailabilityZoneRebalancing_ENABLED,
	})
	scaling := service.AutoScaleTaskCount(&awsapplicationautoscaling.EnableScalingProps{
		MinCapacity: jsii.Number(float64(k.MinTasks)),
		MaxCapacity: jsii.Number(float64(k.MaxTasks)),
	})
	scaling.ScaleOnCpuUtilization(jsii.String("Cpu"), &awsecs.CpuUtilizationScalingProps{
		TargetUtilizationPercent: jsii.Number(float64(k.TargetCPUPercent)),
	})
	listenerProps := &elb.BaseNetworkListenerProps{Port: jsii.Number(float64(k.Port)), Protocol: elb.Protocol_TCP}
	if k.CertificateArn != "" {
		listenerProps.Protocol = elb.Protocol_TLS
		listenerProps.Certificates = &[]elb.IListenerCertificate{elb.ListenerCertificate_FromArn(jsii.String(k.CertificateArn))}
		listenerProps.SslPolicy = elb.SslPolicy_RECOMMENDED_TLS
	} else {
		awscdk.Annotations_Of(scope).AddWarningV2(jsii.String("strata:kafkaPlaintext"), jsii.String(
			"the Kafka gateway's listener is plain TCP: no KafkaGateway.CertificateArn (context strata:kafkaCertificateArn) was given, so records cross the VPC unencrypted"), nil)
	}
	listener := nlb.AddListener(jsii.String("Kafka"), listenerProps)
	targets := listener.AddTargets(jsii.String("Gateway"), &elb.AddNetworkTargetsProps{
		Port:     jsii.Number(GatewayPort),
		Protocol: elb.Protocol_TCP,
		Targets: &[]elb.INetworkLoadBalancerTarget{service.LoadBalancerTarget(&awsecs.LoadBalancerTargetOptions{
			ContainerName: jsii.String("gateway"),
			ContainerPort: jsii.Number(GatewayPort),
		})},
		HealthCheck: &elb.HealthCheck{
			Protocol: elb.Protocol_TCP,
			Interval: awscdk.Duration_Seconds(jsii.Number(10)),
		},
		// Connections of a stopping task end with it; Kafka clients reconnect.
		DeregistrationDelay: awscdk.Duration_Seconds(jsii.Number(30)),
	})
	s.Gateway = &Gateway{VPC: vpc, Cluster: cluster, Task: task, Service: service, LoadBalancer: nlb,
		Listener: listener, Role: role, Logs: logs, Bootstrap: bootstrap}
	s.observeGateway(targets)
}

// observeGateway adds the gateway's alarms (server errors over every API, unhealthy
// targets) and its dashboard row.
func (s *Strata) observeGateway(targets elb.NetworkTargetGroup) {
	scope := constructs.NewConstruct(s, jsii.String("KafkaGatewayMonitoring"))
	serverErrors := strataMetric(deploy.MetricKafkaServerErrors, "Sum", map[string]*string{})
	s.alarm(scope, "ServerErrors", "Kafka requests the gateway failed on its side (storage, timeouts, coordinator unavailable) in 5 minutes",
		serverErrors, s.props.Alarms.GatewayServerErrors)
	unhealthy := targets.Metrics().UnHealthyHostCount(&awscloudwatch.MetricOptions{
		Period: fiveMinutes, Statistic: jsii.String("Maximum")})
	s.alarm(scope, "UnhealthyTasks", "Kafka gateway tasks failing the load balancer's health check", unhealthy, 1)
	requests := strataMetric(deploy.MetricKafkaRequests, "Sum", map[string]*string{})
	slowest := strataMetric(deploy.MetricKafkaRequestDurationMax, "Maximum", map[string]*string{})
	cpu := s.Gateway.Service.MetricCpuUtilization(&awscloudwatch.MetricOptions{Period: fiveMinutes})
	s.Dashboard.AddWidgets(
		graph("Kafka requests, server errors", []awscloudwatch.IMetric{requests, serverErrors}),
		graph("Kafka slowest request (s)", []awscloudwatch.IMetric{slowest}),
		graph("Kafka gateway CPU (%), unhealthy tasks", []awscloudwatch.IMetric{cpu, unhealthy}),
	)
}
