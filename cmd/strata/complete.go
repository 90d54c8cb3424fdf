package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
)

// completionTimeout bounds the server query behind one completion: a shell must not
// hang on a server that is down.
const completionTimeout = 2 * time.Second

// nameLister lists the names a completion offers.
type nameLister func(ctx context.Context, c *client.Client) ([]string, error)

func listTopics(ctx context.Context, c *client.Client) ([]string, error) { return c.ListTopics(ctx) }
func listGroups(ctx context.Context, c *client.Client) ([]string, error) { return c.ListGroups(ctx) }

// completeNames offers the server's names (from --url, with --token or the AWS flags as
// given on the line being completed); without a server it offers nothing rather than
// files.
func (o *options) completeNames(list nameLister) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		c, err := o.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		names, err := list(ctx, c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// firstArg limits a completion to the first positional argument.
func firstArg(f func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f(cmd, args, toComplete)
	}
}

// addCompletions makes the shell completion (strata completion bash|zsh|fish) offer
// topic and group names where a command takes one, asking the server.
func addCompletions(root *cobra.Command, o *options) {
	topics, groups := o.completeNames(listTopics), o.completeNames(listGroups)
	args := map[string]func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective){
		"topics describe": topics, "topics alter": topics, "topics delete": topics, "produce": topics, "consume": topics,
		"groups describe": groups, "groups reset": groups, "groups settings": groups, "groups delete-offsets": groups, "groups delete": groups,
	}
	flags := map[string]map[string]func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective){
		"consume":               {"group": groups},
		"groups reset":          {"topic": topics},
		"groups delete-offsets": {"topic": topics},
		"groups settings":       {"dead-letter-topic": topics},
	}
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		if f, ok := args[path]; ok {
			c.ValidArgsFunction = firstArg(f)
		}
		for name, f := range flags[path] {
			_ = c.RegisterFlagCompletionFunc(name, f)
		}
		for _, sub := range c.Commands() {
			p := sub.Name()
			if path != "" {
				p = path + " " + p
			}
			walk(sub, p)
		}
	}
	walk(root, "")
}
