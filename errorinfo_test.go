package jobgraph_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

var (
	errDiskFull = errors.New("disk full")
	errNoQuota  = errors.New("no quota")
	errLocal    = errors.New("not registered")
)

func init() {
	jobgraph.RegisterErrorCode("test.disk-full", errDiskFull)
	jobgraph.RegisterErrorCode("test.no-quota", errNoQuota)
	jobgraph.RegisterErrorCode("test.no-quota", errNoQuota) // the same pair again is a no-op
}

// lostInput is a failure that names an unreadable input partition, as a TaskExecutor's is.
type lostInput struct {
	p jobgraph.IntermediateResultPartitionID
}

func (e *lostInput) Error() string                                                { return "input lost" }
func (e *lostInput) UnavailablePartition() jobgraph.IntermediateResultPartitionID { return e.p }

// An ErrorInfo crosses a process boundary (JSON here) and its Err still matches the registered
// sentinels the original matched, through wrapping, joins and custom Is methods; unregistered ones
// are not carried.
func TestErrorInfoCarriesRegisteredSentinelsAcrossJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	orig := fmt.Errorf("task t failed: %w", errors.Join(errNoQuota, fmt.Errorf("write: %w", errDiskFull), errLocal))
	info := jobgraph.NewErrorInfo(orig, at)
	assert.Equal(t, []string{"test.disk-full", "test.no-quota"}, info.Codes, "registration order")

	data, err := json.Marshal(info)
	require.NoError(t, err)
	var far jobgraph.ErrorInfo
	require.NoError(t, json.Unmarshal(data, &far))
	assert.Equal(t, *info, far)

	got := far.Err()
	assert.EqualError(t, got, orig.Error())
	assert.ErrorIs(t, got, errDiskFull)
	assert.ErrorIs(t, got, errNoQuota)
	assert.NotErrorIs(t, got, errLocal, "an unregistered sentinel does not travel")
	assert.ErrorIs(t, fmt.Errorf("wrapped again: %w", got), errDiskFull)

	// Serialized again (a second hop), the codes stay.
	assert.Equal(t, info.Codes, jobgraph.NewErrorInfo(fmt.Errorf("hop: %w", got), at).Codes)

	var nilInfo *jobgraph.ErrorInfo
	assert.NoError(t, nilInfo.Err())
	assert.Nil(t, jobgraph.NewErrorInfo(nil, at))
	assert.Nil(t, jobgraph.ErrorCodes(errLocal))
}

// A custom Is method counts as a match, as errors.Is has it.
type isDiskFull struct{}

func (isDiskFull) Error() string        { return "custom" }
func (isDiskFull) Is(target error) bool { return target == errDiskFull }
func (isDiskFull) Unwrap() error        { return nil }

func TestErrorCodesFollowCustomIs(t *testing.T) {
	assert.Equal(t, []string{"test.disk-full"}, jobgraph.ErrorCodes(fmt.Errorf("x: %w", isDiskFull{})))
}

func TestErrorInfoKeepsTheUnavailablePartition(t *testing.T) {
	p := jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: jobgraph.NewIntermediateDataSetID(), PartitionIndex: 3}
	info := jobgraph.NewErrorInfo(fmt.Errorf("read: %w", &lostInput{p}), time.Time{})
	require.NotNil(t, info.UnavailablePartition)
	assert.Equal(t, p, *info.UnavailablePartition)

	data, err := json.Marshal(info)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "timestamp", "a zero timestamp is left out")
	var far jobgraph.ErrorInfo
	require.NoError(t, json.Unmarshal(data, &far))
	var pe interface {
		UnavailablePartition() jobgraph.IntermediateResultPartitionID
	}
	require.ErrorAs(t, fmt.Errorf("task failed: %w", far.Err()), &pe)
	assert.Equal(t, p, pe.UnavailablePartition())

	plain := jobgraph.NewErrorInfo(errors.New("x"), time.Time{}).Err()
	assert.False(t, errors.As(plain, &pe), "no partition, no method")
}

func TestRegisterErrorCodeRefusesConflicts(t *testing.T) {
	assert.PanicsWithValue(t, `jobgraph.RegisterErrorCode("test.disk-full", other): the code is registered for "disk full" already`,
		func() { jobgraph.RegisterErrorCode("test.disk-full", errors.New("other")) })
	assert.PanicsWithValue(t, `jobgraph.RegisterErrorCode("test.other", disk full): the sentinel is registered as "test.disk-full" already`,
		func() { jobgraph.RegisterErrorCode("test.other", errDiskFull) })
	assert.Panics(t, func() { jobgraph.RegisterErrorCode("", errors.New("x")) })
	assert.Panics(t, func() { jobgraph.RegisterErrorCode("test.nil", nil) })
}

func TestErrorInfoPrintsAsItsMessage(t *testing.T) {
	info := jobgraph.NewErrorInfo(fmt.Errorf("task %q: %w", "map (1/2)", errors.New("disk full")), time.Unix(0, 0))
	assert.Equal(t, `task "map (1/2)": disk full`, fmt.Sprintf("%v", info))
	assert.Equal(t, `failed: task "map (1/2)": disk full`, fmt.Sprintf("failed: %s", info))
	var none *jobgraph.ErrorInfo
	assert.Equal(t, "<nil>", fmt.Sprint(none))
}

// valueErr is an error of a non-pointer type whose field may hold an error of an uncomparable
// type (listErr): such a value can be compared with a sentinel, but not hashed.
type valueErr struct{ cause error }

func (e valueErr) Error() string { return "value: " + e.cause.Error() }
func (e valueErr) Unwrap() error { return e.cause }

type listErr []error

func (l listErr) Error() string   { return "list" }
func (l listErr) Unwrap() []error { return l }

// ErrorCodes walks an error's tree once and lists exactly the codes of the registered sentinels
// errors.Is matches, in registration order, whatever the tree holds: wrapping, joins, an Is
// method, errors ErrorInfo.Err made, errors of non-pointer types with uncomparable contents.
func TestErrorCodesAgreeWithErrorsIs(t *testing.T) {
	info := jobgraph.NewErrorInfo(errNoQuota, time.Unix(0, 0)).Err()
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"sentinel", errDiskFull, []string{"test.disk-full"}},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", errNoQuota)), []string{"test.no-quota"}},
		{"joined, registration order", errors.Join(errNoQuota, errLocal, errDiskFull), []string{"test.disk-full", "test.no-quota"}},
		{"Is method", fmt.Errorf("x: %w", isDiskFull{}), []string{"test.disk-full"}},
		{"from an ErrorInfo, wrapped", fmt.Errorf("again: %w", info), []string{"test.no-quota"}},
		{"value type over an uncomparable list", valueErr{listErr{errLocal, fmt.Errorf("y: %w", errDiskFull)}}, []string{"test.disk-full"}},
		{"unregistered only", fmt.Errorf("z: %w", errLocal), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, jobgraph.ErrorCodes(tc.err))
			assert.Equal(t, slicesContain(tc.want, "test.disk-full"), errors.Is(tc.err, errDiskFull))
			assert.Equal(t, slicesContain(tc.want, "test.no-quota"), errors.Is(tc.err, errNoQuota))
		})
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// BenchmarkErrorCodes is NewErrorInfo's walk for an error wrapped twice, as a JobMaster's
// FreeSlot cause is, against the registered sentinels (here the root package's and the two of
// these tests; a program that imports every package registers about 80: docs/BENCHMARKS.md).
func BenchmarkErrorCodes(b *testing.B) {
	err := fmt.Errorf("freeing: %w", fmt.Errorf("closing: %w", errLocal))
	for b.Loop() {
		jobgraph.ErrorCodes(err)
	}
}

// An ErrorInfo with one code (a gateway message's usual failure) turns back into an error in one
// allocation, holding its own copy of the code: changing the ErrorInfo afterwards changes
// nothing the error matches. With two codes it matches both, and keeps its own copy too.
func TestErrorInfoErrWithOneCodeAllocatesOnce(t *testing.T) {
	info := jobgraph.NewErrorInfo(fmt.Errorf("job: %w", jobgraph.ErrInvalidJobGraph), time.Time{})
	require.Len(t, info.Codes, 1)
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = info.Err() }))
	err := info.Err()
	info.Codes[0] = "something.else"
	assert.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	assert.Equal(t, "job: "+jobgraph.ErrInvalidJobGraph.Error(), err.Error())

	two := &jobgraph.ErrorInfo{Message: "m", Codes: []string{"jobgraph.invalid-job-graph", "jobgraph.invalid-job-graph"}}
	err = two.Err()
	two.Codes[0], two.Codes[1] = "x", "y"
	assert.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	assert.NotErrorIs(t, (&jobgraph.ErrorInfo{Message: "m"}).Err(), jobgraph.ErrInvalidJobGraph)
}
