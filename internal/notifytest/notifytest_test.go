package notifytest_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph/internal/notifytest"
	"github.com/jobgraph/jobgraph/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A Callback tells a done called inside the Notify call on the caller's goroutine from one
// called later on another goroutine, and a Set notices two dones at once.
func TestCallbackRecordsWhereAndWhenDoneRan(t *testing.T) {
	var set notifytest.Set
	inside := set.New()
	inside.Notify(func(done func(error)) { done(rpc.ErrClosed) })
	calls := inside.Calls()
	require.Len(t, calls, 1)
	assert.True(t, calls[0].DuringNotify)
	assert.Equal(t, calls[0].Caller, calls[0].Goroutine)
	assert.Equal(t, notifytest.GoroutineID(), calls[0].Caller)

	later := set.New()
	var kept func(error)
	later.Notify(func(done func(error)) { kept = done })
	assert.Empty(t, later.Calls())
	ran := make(chan struct{})
	go func() { defer close(ran); kept(nil) }()
	<-ran
	calls = later.Calls()
	require.Len(t, calls, 1)
	assert.False(t, calls[0].DuringNotify)
	assert.NotEqual(t, calls[0].Caller, calls[0].Goroutine)
	assert.False(t, set.Overlapped())

	hold := set.NewHolding()
	go hold.Notify(func(done func(error)) { done(nil) })
	<-hold.Inside()
	set.New().Done(nil) // while hold's Done blocks
	hold.Release()
	<-hold.Called()
	assert.True(t, set.Overlapped())
}

// SameError wants the same text, unreachability and sentinels.
func TestSameError(t *testing.T) {
	fenced := &rpc.FencingError{Endpoint: "e", Expected: "a", Got: "b"}
	assert.Empty(t, notifytest.SameError(nil, nil))
	assert.Empty(t, notifytest.SameError(fenced, &rpc.FencingError{Endpoint: "e", Expected: "a", Got: "b"}))
	assert.NotEmpty(t, notifytest.SameError(nil, fenced))
	assert.NotEmpty(t, notifytest.SameError(fenced, nil))
	assert.NotEmpty(t, notifytest.SameError(errors.New("x"), errors.New("y")))
	assert.NotEmpty(t, notifytest.SameError(errors.New(fenced.Error()), fenced), "the same text without the sentinel")
	mine := errors.New("mine")
	assert.NotEmpty(t, notifytest.SameError(fmt.Errorf("%w", rpc.ErrClosed), fmt.Errorf("%w", errors.New("closed")), mine), "rpc.ErrClosed on one side only")
	assert.Empty(t, notifytest.SameError(fmt.Errorf("%w", mine), fmt.Errorf("%w", mine), mine))
	assert.NotEmpty(t, notifytest.SameError(fmt.Errorf("%w", mine), errors.New("mine"), mine))
}
