package lambdaconsumer

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// AWSConfig names the stores of a deployment.
type AWSConfig struct {
	Bucket, ObjectPrefix, TablePrefix string
}

// EnvConfig reads the AWSConfig from the environment the stack sets (STRATA_BUCKET,
// STRATA_OBJECT_PREFIX, STRATA_TABLE_PREFIX; functions/README.md).
func EnvConfig() AWSConfig {
	return AWSConfig{
		Bucket:       getenv(deploy.EnvBucket),
		ObjectPrefix: os.Getenv(deploy.EnvObjectPrefix),
		TablePrefix:  getenv(deploy.EnvTablePrefix),
	}
}

// OpenAWS opens the log and the coordinator on S3 and DynamoDB with the SDK's default
// configuration chain (the function's role; AWS_ENDPOINT_URL for an emulator).
func OpenAWS(ctx context.Context, c AWSConfig) (Backend, error) {
	dcfg := dynamo.DefaultConfig()
	if c.Bucket != "" {
		dcfg.Bucket = c.Bucket
	}
	if c.TablePrefix != "" {
		dcfg.TablePrefix = c.TablePrefix
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return Backend{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	pathStyle := os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	s3c := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) { o.UsePathStyle = pathStyle })
	meta := dynamo.New(dynamodb.NewFromConfig(awsCfg), dcfg)
	l, err := log.New(log.Config{Objects: s3store.New(s3c, dcfg.Bucket, c.ObjectPrefix), Meta: meta})
	if err != nil {
		return Backend{}, err
	}
	return Backend{Log: l, Groups: group.New(meta, l, nil)}, nil
}

func getenv(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// stdoutMetrics is the default sink: EMF lines on standard output, under
// STRATA_METRICS_NAMESPACE (default "Strata").
func stdoutMetrics() Metrics {
	ns := getenv(deploy.EnvMetricsNamespace)
	if ns == "" {
		ns = deploy.MetricsNamespace
	}
	return emf.New(os.Stdout, ns, nil)
}
