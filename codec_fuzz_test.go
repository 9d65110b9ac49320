package jobgraph_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// FuzzDecode: Decode never panics; a graph it accepts can be validated, ordered and re-encoded
// without panicking, and its JSON form is a fixed point (encode → Decode → encode gives the same
// bytes, and both graphs validate alike).
func FuzzDecode(f *testing.F) {
	rich, err := json.Marshal(richGraph())
	require.NoError(f, err)
	f.Add(rich)
	f.Add([]byte(`{"jobId":"00000000000000000000000000000001","name":"wc","type":"BATCH","vertices":[` +
		`{"id":"00000000000000000000000000000002","name":"src","parallelism":2,"invokable":"read","config":"aGk=",` +
		`"results":[{"id":"00000000000000000000000000000003","resultType":"BLOCKING"}]},` +
		`{"id":"00000000000000000000000000000004","name":"cnt","parallelism":2,"invokable":"count",` +
		`"inputs":[{"source":"00000000000000000000000000000003","target":"00000000000000000000000000000004","distributionPattern":"ALL_TO_ALL"}]}]}`))
	// A cycle (a ⇄ b) and a dangling edge: decode fine, fail validation.
	f.Add([]byte(`{"jobId":"00000000000000000000000000000001","vertices":[` +
		`{"id":"00000000000000000000000000000002","parallelism":1,"invokable":"x","inputs":[{"source":"00000000000000000000000000000004","target":"00000000000000000000000000000002","distributionPattern":"POINTWISE"}],"results":[{"id":"00000000000000000000000000000003","resultType":"PIPELINED"}]},` +
		`{"id":"00000000000000000000000000000005","parallelism":1,"invokable":"x","inputs":[{"source":"00000000000000000000000000000003","target":"00000000000000000000000000000005","distributionPattern":"POINTWISE"}],"results":[{"id":"00000000000000000000000000000004","resultType":"PIPELINED"}]},` +
		`{"id":"00000000000000000000000000000006","parallelism":0,"invokable":"","inputs":[{"source":"000000000000000000000000000000ff","target":"00000000000000000000000000000001","distributionPattern":"ALL_TO_ALL"}]}]}`))
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"vertices":null}`, `{"vertices":[]}`, `{"vertices":[null]}`,
		`{"vertices":[{"inputs":[null]}]}`, `{"vertices":[{"results":[null]}]}`, `{"vertices":[{}, {}]}`,
		`{"jobId":"xyz"}`, `{"type":"ALL_TO_SOME"}`, `{"bogus":1}`, `{} {}`, `{}}`,
		`{"vertices":[{"config":""}]}`, `{"vertices":[{"resources":{"cpuCores":-0}}]}`,
		`{"restartStrategy":{"exponentialDelayJitterFactor":-0,"type":"exponential-delay"}}`,
		`{"vertices":[{"parallelism":9223372036854775807,"maxParallelism":-9223372036854775808}]}`,
		`{"NAME":"case-insensitive keys","Vertices":[]}`, "{\"name\":\"\xff\\ud800\"}",
		`{"name":"a","Name":"b"}`, `{"vertices":[{"id":"00000000000000000000000000000002","ID":"00000000000000000000000000000003"}]}`,
		`{"checkpointing":{"interval":1,"interval":2}}`, `{"vertices":[{"inputs":[{"target":"00000000000000000000000000000001","tarGet":"00000000000000000000000000000001"}]}]}`,
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := jobgraph.Decode(data)
		if err != nil {
			if g != nil {
				t.Fatalf("Decode returned a graph with error %v", err)
			}
			return
		}
		verr := g.Validate()
		if verr != nil {
			var ve *jobgraph.ValidationError
			if !errors.As(verr, &ve) || !errors.Is(verr, jobgraph.ErrInvalidJobGraph) {
				t.Fatalf("Validate returned %T %v, not a *ValidationError", verr, verr)
			}
		}
		order, oerr := g.TopologicalOrder()
		if oerr == nil && len(order) != len(g.Vertices) {
			t.Fatalf("TopologicalOrder returned %d of %d vertices", len(order), len(g.Vertices))
		}

		m1, err := json.Marshal(g)
		if err != nil {
			t.Fatalf("encoding a decoded graph: %v", err)
		}
		g2, err := jobgraph.Decode(m1)
		if err != nil {
			t.Fatalf("decoding an encoded graph: %v\n%s", err, m1)
		}
		m2, err := json.Marshal(g2)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		if string(m1) != string(m2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", m1, m2)
		}
		if errString(g2.Validate()) != errString(verr) {
			t.Fatalf("Validate differs after a round trip: %v vs %v", verr, g2.Validate())
		}
		// Clone (field by field for such a graph) gives what the JSON round trip gives.
		c, err := g.Clone()
		if err != nil {
			t.Fatalf("Clone of a decoded graph: %v", err)
		}
		if !reflect.DeepEqual(c, g2) {
			t.Fatalf("Clone differs from the JSON round trip:\n%#v\n%#v", c, g2)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
