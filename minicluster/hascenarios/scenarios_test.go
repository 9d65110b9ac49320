package hascenarios_test

import (
	"testing"

	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/minicluster/hascenarios"
)

// TestEmbedded runs the suite on ha/embedded: the clients of one backend come from NewClient,
// and Revoke revokes (and at once re-grants) every election of the client.
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
		Revoke: func(t *testing.T, s ha.Services) {
			t.Fatal("TODO(hascen): revoke every election of an embedded client")
		},
		InBubble: true,
	})
}
