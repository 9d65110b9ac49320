package hascenarios_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/minicluster/hascenarios"
)

// TestEmbedded runs the suite on ha/embedded: the clients of one backend come from NewClient,
// and Revoke revokes (and at once re-grants) every election the client leads (RevokeAll).
func TestEmbedded(t *testing.T) {
	hascenarios.Run(t, hascenarios.Backend{
		Name: "embedded",
		New: func(t *testing.T) func(t *testing.T) ha.Services {
			var first *embedded.Services
			return func(t *testing.T) ha.Services {
				if first == nil {
					first = embedded.New()
					return first
				}
				return first.NewClient()
			}
		},
		Revoke:   func(t *testing.T, s ha.Services) { s.(*embedded.Services).RevokeAll() },
		InBubble: true,
	})
}

// TestFile runs the suite on ha/file: one directory per scenario, each client a file.New over
// it (one JobManager process each), at the default poll interval; Revoke is DropLeadership, after
// which the client takes the lock again at its next poll unless another client did.
func TestFile(t *testing.T) {
	hascenarios.Run(t, hascenarios.Backend{
		Name: "file",
		New: func(t *testing.T) func(t *testing.T) ha.Services {
			dir := t.TempDir()
			return func(t *testing.T) ha.Services {
				s, err := file.New(file.Options{Dir: dir})
				require.NoError(t, err)
				return s
			}
		},
		Revoke: func(t *testing.T, s ha.Services) {
			require.NoError(t, s.(*file.Services).DropLeadership())
		},
		OneLeaderPerClient: true,
		InBubble:           true,
		RegrantDelay:       file.DefaultPollInterval,
		RetrievalDelay:     file.DefaultPollInterval,
	})
}
