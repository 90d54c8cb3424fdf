package strata

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/pkg/deploy"
)

// Metric names the functions emit in CloudWatch embedded metric format under
// deploy.MetricsNamespace, from pkg/deploy (which pkg/metrics/emf emits by): the
// Prometheus names of pkg/metrics with their "strata_" prefix. The alarms read these
// dimension sets: append latency without dimensions (all topics: the sink's rollup set),
// consumer lag, dead letters, time to data loss and parked keys per {group, topic} (the
// largest lag, the smallest time, the keys parked over the topic's partitions).
const (
	MetricAppendLatency = deploy.MetricAppendLatency
	MetricLagSeconds    = deploy.MetricLagSeconds
	MetricDeadLettered  = deploy.MetricDeadLettered
	// MetricSecondsToDataLoss is the smallest time to data loss over the topic's
	// partitions (the dispatch sweep emits it with lag; none while caught up).
	MetricSecondsToDataLoss = deploy.MetricSecondsToDataLoss
	// MetricParkedKeys is the keys a group parked over the topic's partitions (the
	// dispatch sweep emits it), waiting for a release.
	MetricParkedKeys = deploy.MetricParkedKeys
	DimensionGroup   = "group"
	DimensionTopic   = "topic"
)

var fiveMinutes = awscdk.Duration_Minutes(jsii.Number(5))

func strataMetric(name, statistic string, dims map[string]*string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(deploy.MetricsNamespace),
		MetricName:    jsii.String(name),
		Statistic:     jsii.String(statistic),
		Period:        fiveMinutes,
		DimensionsMap: &dims,
	})
}

// alarm creates an alarm at or above threshold, missing data not breaching (an idle
// deployment emits nothing and is healthy), with the deployment's alarm actions.
func (s *Strata) alarm(scope constructs.Construct, id, description string, m awscloudwatch.IMetric, threshold float64) {
	s.alarmOp(scope, id, description, m, threshold, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD)
}

// alarmOp is alarm with the comparison op: a time to data loss alarms below its threshold.
func (s *Strata) alarmOp(scope constructs.Construct, id, description string, m awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator) {
	a := awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             m,
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: op,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		AlarmDescription:   jsii.String(description),
	})
	if len(s.props.AlarmActions) > 0 {
		a.AddAlarmAction(s.props.AlarmActions...)
	}
	s.Alarms = append(s.Alarms, a)
}

// newObservability creates the dashboard and the deployment-wide alarms: errors and
// throttles of each function, append latency p99, stream batches dispatch gave up on,
// consumers a stream batch could not invoke.
func (s *Strata) newObservability() {
	scope := constructs.NewConstruct(s, jsii.String("Monitoring"))
	s.Dashboard = awscloudwatch.NewDashboard(scope, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{})
	var errs, throttles []awscloudwatch.IMetric
	for _, name := range ownFunctions {
		e, t := s.functionAlarms(scope, name, name, s.Functions[name])
		errs, throttles = append(errs, e), append(throttles, t)
	}
	p99 := strataMetric(MetricAppendLatency, "p99", map[string]*string{})
	s.alarm(scope, "AppendLatencyP99", "Strata append acknowledgement latency p99 (seconds)",
		p99, s.props.Alarms.AppendLatencyP99.Seconds())
	// Commits not yet indexed (Strata's under-replicated partitions): how far the
	// materialiser, the dispatch function on the sequencer stream, is behind.
	iterAge := s.Functions[deploy.FunctionDispatch].Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
		Period: fiveMinutes, Statistic: jsii.String("Maximum")})
	s.alarm(scope, "StreamIteratorAge", "Age (ms) of the newest sequencer stream record the dispatch function has read: commits not yet indexed wait this long",
		iterAge, float64(s.props.Alarms.StreamIteratorAge.Milliseconds()))
	failures := s.StreamFailures.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
		Period: fiveMinutes, Statistic: jsii.String("Maximum")})
	s.alarm(scope, "StreamFailures", "Stream batches dispatch gave up on (the sweep re-dispatches; inspect the queue)", failures, 1)
	// A stream batch counts a consumer it could not invoke instead of failing (the
	// sweep retries it): this alarm says so; dispatch's logs name the function.
	invokeErrs := strataMetric(deploy.MetricDispatchInvokeErrors, "Sum", map[string]*string{"trigger": jsii.String("stream")})
	s.alarm(scope, "DispatchInvokeErrors", "Consumer invocations dispatch could not make from the stream (a subscription's function missing, throttled or not invokable; the sweep retries; the logs name it)", invokeErrs, 1)
	s.Dashboard.AddWidgets(
		graph("Function errors", errs),
		graph("Function throttles", throttles),
		graph("Append latency p99 (s)", []awscloudwatch.IMetric{p99}),
		graph("Stream batches failed", []awscloudwatch.IMetric{failures}),
		graph("Dispatch stream iterator age (ms)", []awscloudwatch.IMetric{iterAge}),
	)
}

// functionAlarms adds the error and throttle alarms of fn and returns their metrics.
func (s *Strata) functionAlarms(scope constructs.Construct, id, label string, fn awslambda.IFunction) (errs, throttles awscloudwatch.IMetric) {
	opts := &awscloudwatch.MetricOptions{Period: fiveMinutes, Statistic: jsii.String("Sum"), Label: jsii.String(label)}
	errs, throttles = fn.MetricErrors(opts), fn.MetricThrottles(opts)
	s.alarm(scope, "Errors-"+id, "Errors of the "+label+" function", errs, s.props.Alarms.FunctionErrors)
	s.alarm(scope, "Throttles-"+id, "Throttles of the "+label+" function", throttles, s.props.Alarms.Throttles)
	return errs, throttles
}

// observeSubscription adds the lag, dead-letter, time to data loss, parked keys, error
// and throttle alarms and a
// dashboard row for a subscribed consumer function.
func (s *Strata) observeSubscription(fn awslambda.IFunction, topic, group string) {
	scope := constructs.NewConstruct(s, jsii.String("Subscription:"+group+":"+topic))
	dims := map[string]*string{DimensionGroup: jsii.String(group), DimensionTopic: jsii.String(topic)}
	lag := strataMetric(MetricLagSeconds, "Maximum", dims)
	dead := strataMetric(MetricDeadLettered, "Sum", dims)
	s.alarm(scope, "LagSeconds", "Consumer lag in seconds of group "+group+" on topic "+topic, lag, s.props.Alarms.LagSeconds)
	s.alarm(scope, "DeadLettered", "Records dead-lettered by group "+group+" on topic "+topic, dead, s.props.Alarms.DeadLettered)
	toLoss := strataMetric(MetricSecondsToDataLoss, "Minimum", dims)
	s.alarmOp(scope, "TimeToDataLoss", "Seconds until group "+group+" loses unread records of topic "+topic+" to retention",
		toLoss, s.props.Alarms.TimeToDataLoss.Seconds(), awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD)
	parked := strataMetric(MetricParkedKeys, "Maximum", dims)
	s.alarm(scope, "ParkedKeys", "Keys group "+group+" parked on topic "+topic+" (a poison record each), waiting for a release",
		parked, s.props.Alarms.ParkedKeys)
	errs, throttles := s.functionAlarms(scope, "consumer", "consumer "+group+"/"+topic, fn)
	s.Dashboard.AddWidgets(
		graph("Lag seconds "+group+"/"+topic, []awscloudwatch.IMetric{lag}),
		graph("Dead-lettered "+group+"/"+topic, []awscloudwatch.IMetric{dead}),
		graph("Seconds to data loss "+group+"/"+topic, []awscloudwatch.IMetric{toLoss}),
		graph("Parked keys "+group+"/"+topic, []awscloudwatch.IMetric{parked}),
		graph("Consumer errors, throttles "+group+"/"+topic, []awscloudwatch.IMetric{errs, throttles}),
	)
}

func graph(title string, metrics []awscloudwatch.IMetric) awscloudwatch.GraphWidget {
	return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title: jsii.String(title),
		Left:  &metrics,
		Width: jsii.Number(6),
	})
}
