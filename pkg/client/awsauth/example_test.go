package awsauth_test

import (
	"context"
	"fmt"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/client/awsauth"
)

// A Client for a deployment on AWS: every request signed with the default credential
// chain, for the region of the execute-api URL.
func ExampleOption() {
	ctx := context.Background()
	url := "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
	sign, err := awsauth.Option(ctx, url, awsauth.Options{})
	if err != nil {
		panic(err)
	}
	c, err := client.New(url, sign)
	if err != nil {
		panic(err)
	}
	topics, err := c.ListTopics(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(topics)
}

// A Client for a deployment reached by the api function's URL (strata:frontDoor):
// requests are signed for the service lambda, chosen from the lambda-url host; behind
// another name (CloudFront, a custom domain) say so with Options.Service.
func ExampleOption_functionURL() {
	ctx := context.Background()
	url := "https://abcdefghij0123456789klmnop.lambda-url.eu-west-1.on.aws"
	sign, err := awsauth.Option(ctx, url, awsauth.Options{})
	if err != nil {
		panic(err)
	}
	c, err := client.New(url, sign)
	if err != nil {
		panic(err)
	}
	behindCloudFront, err := awsauth.Option(ctx, "https://strata.example.com", awsauth.Options{Service: awsauth.ServiceLambda, Region: "eu-west-1"})
	if err != nil {
		panic(err)
	}
	_, _ = c, behindCloudFront
}
