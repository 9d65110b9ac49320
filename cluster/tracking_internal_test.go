package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// deferredFake is a DeferredStartFactory that records whether its start function ran.
type deferredFake struct {
	job     jobgraph.JobID
	started *bool
}

func (f deferredFake) JobID() jobgraph.JobID     { return f.job }
func (f deferredFake) JobName() string           { return "j" }
func (f deferredFake) JobType() jobgraph.JobType { return jobgraph.Streaming }
func (f deferredFake) Create(context.Context, jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	panic("the tracking factory must keep the deferred start, not call Create")
}
func (f deferredFake) CreateUnscheduled(context.Context, jobgraph.JobMasterID) (jobmaster.JobMaster, func(), error) {
	return nil, func() { *f.started = true }, nil
}

// The JobManager's tracking factory keeps the wrapped factory's deferred start: the runner gets
// the JobMaster before its scheduling starts (the start function comes back uncalled), and the
// JobMaster is tracked all the same. Without it the runner could answer INITIALIZING while a
// task already ran (hascenarios' standby scenario failed so once in CI).
func TestTrackingFactoryKeepsTheDeferredStart(t *testing.T) {
	started := false
	jm := &JobManager{jobMasters: make(map[jobgraph.JobID]*trackedJobMaster)}
	job := jobgraph.NewJobID()
	var f jobmaster.JobMasterServiceFactory = trackingFactory{deferredFake{job: job, started: &started}, jm}
	d, ok := f.(jobmaster.DeferredStartFactory)
	require.True(t, ok)
	created, start, err := d.CreateUnscheduled(context.Background(), jobgraph.NewJobMasterID())
	require.NoError(t, err)
	assert.False(t, started, "scheduling has not started")
	require.NotNil(t, jm.jobMasters[job])
	assert.Same(t, jm.jobMasters[job], created)
	start()
	assert.True(t, started)
}
