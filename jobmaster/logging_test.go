package jobmaster_test

import (
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"

	"github.com/jobgraph/jobgraph/internal/logtest"
)

// The job's records carry each attribute once: the scheduler adds job and jobName, the JobMaster
// does not add job again ("job=X job=X" before).
func TestJobMasterLogRecordsNameTheJobOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, records := logtest.NewRecorder(slog.LevelDebug)
		e := newHBEnv(t, jobmaster.Config{Logger: logger})
		id := "job=" + e.g.JobID.String()
		changed := logtest.WithMessage(records(), "job status changed")
		require.NotEmpty(t, changed)
		assert.Equal(t, logtest.Record{Level: slog.LevelInfo, Msg: "job status changed",
			Attrs: []string{id, "jobName=src-sink", "from=CREATED", "to=RUNNING"}}, changed[0])
		bulks := logtest.WithMessage(records(), "scheduling bulk")
		require.NotEmpty(t, bulks)
		assert.Equal(t, logtest.Record{Level: slog.LevelDebug, Msg: "scheduling bulk",
			Attrs: []string{id, "jobName=src-sink", "executions=1"}}, bulks[0])
	})
}

// The JobStatusListener hears INITIALIZING first, when the JobMaster starts building the job,
// then CREATED and RUNNING.
func TestJobStatusListenerHearsInitializing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var heard []jobgraph.JobStatus
		var at []time.Duration // after the start
		start := time.Now()
		e := newHBEnv(t, jobmaster.Config{JobStatusListener: func(job jobgraph.JobID, s jobgraph.JobStatus, t time.Time) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, s)
			at = append(at, t.Sub(start))
		}})
		require.Equal(t, jobgraph.JobStatusRunning, e.status())
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusInitializing, jobgraph.JobStatusCreated, jobgraph.JobStatusRunning}, heard)
		assert.Equal(t, []time.Duration{0, 0, 0}, at, "all at the (virtual) instant the JobMaster started")
	})
}
