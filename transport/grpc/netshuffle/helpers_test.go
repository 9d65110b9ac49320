package netshuffle_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/taskexecutor/shuffletest"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// suiteCodec encodes the records of the shuffle conformance suite: int, string and
// shuffletest.Record, each a tag byte and varints or bytes.
type suiteCodec struct{}

func (suiteCodec) Append(dst []byte, r any) ([]byte, error) {
	switch v := r.(type) {
	case int:
		return binary.AppendVarint(append(dst, 1), int64(v)), nil
	case string:
		return append(append(dst, 2), v...), nil
	case shuffletest.Record:
		dst = append(dst, 3)
		for _, x := range []int{v.P, v.Sub, v.Seq} {
			dst = binary.AppendVarint(dst, int64(x))
		}
		return dst, nil
	}
	return dst, fmt.Errorf("suite codec: cannot encode %T", r)
}

func (suiteCodec) Decode(b []byte) (any, error) {
	if len(b) == 0 {
		return nil, errors.New("suite codec: empty record")
	}
	switch b[0] {
	case 1:
		v, n := binary.Varint(b[1:])
		if n <= 0 || n != len(b)-1 {
			return nil, errors.New("suite codec: bad int")
		}
		return int(v), nil
	case 2:
		return string(b[1:]), nil
	case 3:
		var xs [3]int
		rest := b[1:]
		for i := range xs {
			v, n := binary.Varint(rest)
			if n <= 0 {
				return nil, errors.New("suite codec: bad Record")
			}
			xs[i], rest = int(v), rest[n:]
		}
		return shuffletest.Record{P: xs[0], Sub: xs[1], Seq: xs[2]}, nil
	}
	return nil, fmt.Errorf("suite codec: unknown tag %d", b[0])
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newEnv starts an Environment on loopback, closed when the test ends.
func newEnv(t testing.TB, cfg netshuffle.Config) *netshuffle.Environment {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	e, err := netshuffle.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}
