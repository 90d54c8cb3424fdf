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
