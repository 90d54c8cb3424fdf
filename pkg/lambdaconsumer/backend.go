package lambdaconsumer

import (
	"context"
	"errors"
	"os"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
)

// OpenNode opens the log and the coordinator of the deployment cfg names (the AWS
// backend unless cfg says otherwise) through pkg/node, the default of Config.Open with
// the configuration from the environment (node.FromEnv: STRATA_BUCKET,
// STRATA_TABLE_PREFIX, STRATA_OBJECT_PREFIX, AWS_ENDPOINT_URL for an emulator).
func OpenNode(ctx context.Context, cfg node.Config) (Backend, error) {
	return openNode(ctx, cfg, "")
}

// OpenNodeEffects is OpenNode with Backend.Effects, the fenced business store over the
// DynamoDB table effectsTable (locally the embedded store), which handlers reach with
// EffectsFrom.
func OpenNodeEffects(ctx context.Context, cfg node.Config, effectsTable string) (Backend, error) {
	if effectsTable == "" {
		return Backend{}, errors.New("lambdaconsumer: no table for the fenced business store")
	}
	return openNode(ctx, cfg, effectsTable)
}

// openNode is OpenNode, with Backend.Effects over effectsTable when it is set (the
// node's metadata store holds the assignments those writes check).
func openNode(ctx context.Context, cfg node.Config, effectsTable string) (Backend, error) {
	if cfg.Backend == "" {
		cfg.Backend = node.BackendAWS
	}
	n, err := node.Open(ctx, cfg, node.PartGroups)
	if err != nil {
		return Backend{}, err
	}
	b := Backend{Log: n.Log(), Groups: n.Coordinator()}
	if effectsTable != "" {
		es, err := n.Effects(effectsTable)
		if err != nil {
			return Backend{}, err
		}
		b.Effects = group.NewEffects(es, n.Log())
	}
	return b, nil
}

// stdoutMetrics is the default sink: EMF lines on standard output, under the
// deployment's STRATA_METRICS_NAMESPACE (default "Strata").
func stdoutMetrics(namespace string) Metrics { return emf.New(os.Stdout, namespace, nil) }
