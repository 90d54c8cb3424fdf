// Command strata is Strata's command-line tool: `strata dev` runs a whole node locally
// (docs/API.md, "Local runtime"), and the other commands manage topics and consumer
// groups, produce and consume over the HTTP API of any Strata endpoint.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stratalog/strata/pkg/client"
)

// Environment variables that set the defaults of --url and --token.
const (
	envURL   = "STRATA_URL"
	envToken = "STRATA_TOKEN"
)

const defaultURL = "http://127.0.0.1:4580"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	o := &options{}
	err := newRootCmdWith(o).ExecuteContext(ctx)
	stop()
	if err != nil {
		printError(os.Stderr, err, o.url, o.json)
		os.Exit(exitCode(err))
	}
}

// options are the flags every API command shares.
type options struct {
	url   string
	token string
	json  bool
	aws   awsOptions
	// awsFlag is --aws, to tell it given from its default.
	awsFlag *pflag.Flag
}

// newRootCmd builds the whole command tree; tests run it with their own args and
// writers.
func newRootCmd() *cobra.Command { return newRootCmdWith(&options{}) }

// newRootCmdWith builds the command tree around o, which holds the parsed shared flags
// once it has run (main reads --url and --json to print a failure).
func newRootCmdWith(o *options) *cobra.Command {
	root := &cobra.Command{
		Use:           "strata",
		Short:         "Strata: a partitioned, retained log on S3 and DynamoDB",
		Long:          "Strata: a partitioned, retained log on S3 and DynamoDB.\n\n" + authHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE:          runParent,
		// Version without a custom template: cobra then needs no text/template, whose
		// reflective method calls would keep every exported method in the binary.
		Version: versionString(),
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&o.url, "url", envOr(envURL, defaultURL), "Strata endpoint, e.g. the address strata dev --addr listens on; without a scheme, http on loopback and https elsewhere (env "+envURL+")")
	pf.StringVar(&o.token, "token", os.Getenv(envToken), "bearer token, for a server started with strata dev --auth (env "+envToken+")")
	pf.BoolVar(&o.json, "json", false, "print JSON instead of tables")
	addAWSFlags(pf, &o.aws)
	o.awsFlag = pf.Lookup("aws")
	root.AddCommand(newDevCmd(), newKafkaCmd(), newTopicsCmd(o), newProduceCmd(o), newConsumeCmd(o), newGetCmd(o), newGroupsCmd(o), newDemoCmd(), newBenchCmd(), newVersionCmd())
	addCompletions(root, o)
	return root
}

// client returns a Client for --url, authenticated as --token or the AWS flags say
// (authHelp).
func (o *options) client() (*client.Client, error) {
	o.aws.signSet = o.awsFlag != nil && o.awsFlag.Changed
	o.url = client.CompleteURL(o.url)
	opts, err := o.authOptions(context.Background())
	if err != nil {
		return nil, err
	}
	return client.New(o.url, opts...)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
