package cost

// Price is one list price: USD per Unit.
type Price struct {
	USD  float64
	Unit string
	// Source is the AWS pricing page the price was read from and Date when.
	Source string
	Date   string
}

// Prices is the one price table every estimate of this package uses, Strata's and the
// alternatives' alike, so a comparison can never mix two sources.
type Prices struct {
	Region string

	S3Put            Price // per PUT request
	S3Get            Price // per GET request
	S3StorageGBMonth Price // per GB-month, S3 Standard, first 50 TB

	DynamoWRU            Price // per on-demand write request unit (1 KB; failed conditional writes too)
	DynamoRRU            Price // per on-demand read request unit (4 KB strongly consistent)
	DynamoStorageGBMonth Price
	StreamsRead          Price // per DynamoDB Streams read request (GetRecords); free from a Lambda trigger

	LambdaRequest     Price // per invocation
	LambdaGBSecondArm Price // per GB-second, arm64
	// LambdaMIFee is the Lambda Managed Instances management fee as a fraction of the
	// instance's EC2 on-demand price; the instance price is ManagedInstanceHour.
	LambdaMIFee         Price
	ManagedInstanceHour Price // m7g.large on-demand (Lambda Managed Instances capacity)
	APIGatewayHTTP      Price // per HTTP API request (metered per 512 KB)

	KinesisShardHour      Price // provisioned
	KinesisPayloadUnit    Price // provisioned PUT payload unit (25 KB)
	KinesisODStreamHour   Price // on-demand
	KinesisODIngestGB     Price
	KinesisODRetrievalGB  Price
	KinesisExtendedRetain Price // per shard-hour, retention beyond 24 h (up to 7 days)

	LogsIngestGB      Price // CloudWatch Logs ingestion (standard class)
	CustomMetricMonth Price // CloudWatch custom metric (first 10,000)
	AlarmMonth        Price // CloudWatch standard-resolution alarm metric
	DashboardMonth    Price // CloudWatch dashboard (beyond the free three)

	MSKBrokerHour       Price // kafka.m7g.large broker
	MSKStorageGBMonth   Price
	MSKSClusterHour     Price // MSK Serverless
	MSKSPartitionHour   Price
	MSKSInGB            Price
	MSKSOutGB           Price
	MSKSStorageGBMonth  Price
	WarpStreamWriteGiB  Price // WarpStream BYOC, uncompressed GiB written (first tier)
	WarpStreamClusterHr Price // WarpStream BYOC cluster fee
	WarpStreamAgentHour Price // m7g.xlarge agent (EC2 on-demand, the user's account)

	KafkaBrokerHour Price // m5.2xlarge on-demand per broker
	EBSgp3GBMonth   Price
	CrossAZGB       Price // per GB crossing AZs (0.01 out + 0.01 in)
}

const checked = "list price as published in 2025, not re-read in this offline session (2026-12-01)"

// USEast1 returns the us-east-1 list prices.
func USEast1() Prices {
	const (
		s3     = "https://aws.amazon.com/s3/pricing/"
		ddb    = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
		lambda = "https://aws.amazon.com/lambda/pricing/"
		apigw  = "https://aws.amazon.com/api-gateway/pricing/"
		kds    = "https://aws.amazon.com/kinesis/data-streams/pricing/"
		ec2    = "https://aws.amazon.com/ec2/pricing/on-demand/"
		ebs    = "https://aws.amazon.com/ebs/pricing/"
		cw     = "https://aws.amazon.com/cloudwatch/pricing/"
		msk    = "https://aws.amazon.com/msk/pricing/"
		warp   = "https://www.warpstream.com/pricing"
		est    = "estimated: " + checked
	)
	return Prices{
		Region:                "us-east-1",
		S3Put:                 Price{0.005 / 1000, "request", s3, checked},
		S3Get:                 Price{0.0004 / 1000, "request", s3, checked},
		S3StorageGBMonth:      Price{0.023, "GB-month", s3, checked},
		DynamoWRU:             Price{0.625 / 1e6, "write request unit", ddb, checked + " (after the Nov 2024 cut)"},
		DynamoRRU:             Price{0.125 / 1e6, "read request unit", ddb, checked + " (after the Nov 2024 cut)"},
		DynamoStorageGBMonth:  Price{0.25, "GB-month", ddb, checked},
		StreamsRead:           Price{0.02 / 100000, "streams read request", ddb, checked},
		LambdaRequest:         Price{0.20 / 1e6, "request", lambda, checked},
		LambdaGBSecondArm:     Price{0.0000133334, "GB-second", lambda, checked},
		LambdaMIFee:           Price{0.15, "fraction of EC2 price", lambda, checked},
		ManagedInstanceHour:   Price{0.0816, "instance-hour (m7g.large)", ec2, checked},
		APIGatewayHTTP:        Price{1.00 / 1e6, "request (512 KB)", apigw, checked + " (first 300M/month)"},
		KinesisShardHour:      Price{0.015, "shard-hour", kds, checked},
		KinesisPayloadUnit:    Price{0.014 / 1e6, "PUT payload unit (25 KB)", kds, checked},
		KinesisODStreamHour:   Price{0.04, "stream-hour", kds, checked},
		KinesisODIngestGB:     Price{0.08, "GB ingested", kds, checked},
		KinesisODRetrievalGB:  Price{0.04, "GB retrieved", kds, checked},
		KinesisExtendedRetain: Price{0.02, "shard-hour beyond 24 h", kds, checked},
		LogsIngestGB:          Price{0.50, "GB ingested", cw, checked},
		CustomMetricMonth:     Price{0.30, "metric-month", cw, checked},
		AlarmMonth:            Price{0.10, "alarm-month", cw, checked},
		DashboardMonth:        Price{3.00, "dashboard-month", cw, checked},
		MSKBrokerHour:         Price{0.84, "broker-hour (kafka.m5.2xlarge)", msk, checked},
		MSKStorageGBMonth:     Price{0.10, "GB-month", msk, checked},
		MSKSClusterHour:       Price{0.75, "cluster-hour", msk, checked},
		MSKSPartitionHour:     Price{0.0015, "partition-hour", msk, checked},
		MSKSInGB:              Price{0.10, "GB in", msk, checked},
		MSKSOutGB:             Price{0.05, "GB out", msk, checked},
		MSKSStorageGBMonth:    Price{0.10, "GB-month", msk, checked},
		WarpStreamWriteGiB:    Price{0.055, "GiB written (uncompressed)", warp, est},
		WarpStreamClusterHr:   Price{0.50, "cluster-hour", warp, est},
		WarpStreamAgentHour:   Price{0.1632, "instance-hour (m7g.xlarge)", ec2, checked},
		KafkaBrokerHour:       Price{0.384, "instance-hour (m5.2xlarge)", ec2, checked},
		EBSgp3GBMonth:         Price{0.08, "GB-month", ebs, checked},
		CrossAZGB:             Price{0.02, "GB across AZs (0.01 each way)", ec2 + " (data transfer)", checked},
	}
}
