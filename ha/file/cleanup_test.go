package file_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha/hatest"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// completions is a task's CheckpointHandler that reports every completed checkpoint.
type completions struct{ done chan checkpoint.CheckpointID }

func (c completions) SnapshotState(context.Context, checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	return checkpoint.StateHandle{Data: []byte("s"), Size: 1}, nil
}
func (c completions) NotifyCheckpointComplete(_ context.Context, id checkpoint.CheckpointID) error {
	select {
	case c.done <- id:
	default:
	}
	return nil
}
func (completions) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// The global cleanup over ha/file: a checkpointing job's checkpoint metadata and ID counter are
// on disk while it runs and until its dirty result is written; once it is CANCELED and cleaned up
// its checkpoint directory is gone (discarded by the Dispatcher, the empty directories removed
// by CleanupJobData), its plan gone, its result clean. With RetainOnCancellation the retained
// checkpoint (one: execution.checkpointing.num-retained 1) and the counter stay. Real time:
// ha/file's clients poll their lock file.
func TestGlobalCleanupOverTheDirectory(t *testing.T) {
	for _, retain := range []bool{false, true} {
		t.Run(fmt.Sprintf("retain=%t", retain), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := clusterServices(t, dir)
			t.Cleanup(func() { assert.NoError(t, s.Close()) })
			done := make(chan checkpoint.CheckpointID, 1)
			reg := taskexecutor.NewRegistry()
			reg.Register("src", func(ctx context.Context, env taskexecutor.Environment) error {
				env.SetCheckpointHandler(completions{done})
				for n := 0; ; n++ {
					if err := env.Output(0).Emit(ctx, 0, n); err != nil {
						return err
					}
					time.Sleep(time.Millisecond) // a source paced by its input
				}
			})
			reg.Register("sink", func(ctx context.Context, env taskexecutor.Environment) error {
				env.SetCheckpointHandler(completions{make(chan checkpoint.CheckpointID)})
				for {
					if _, err := env.Input(0).Next(ctx); err != nil {
						return err
					}
				}
			})
			mc, err := minicluster.New(minicluster.Config{Registry: reg, HA: s})
			require.NoError(t, err)
			require.NoError(t, mc.Start(ctx))
			t.Cleanup(func() { assert.NoError(t, mc.Close()) })
			g := jobgraph.New("checkpointed over ha/file", jobgraph.Streaming)
			g.Connect(g.AddVertex("src", "src", 1), g.AddVertex("sink", "sink", 1), jobgraph.Pointwise, jobgraph.PipelinedBounded)
			g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond, RetainOnCancellation: retain}
			require.NoError(t, mc.SubmitJob(ctx, g))
			select {
			case <-done:
			case <-time.After(hatest.Timeout):
				t.Fatalf("no checkpoint completed within %v", hatest.Timeout)
			}
			jobDir := filepath.Join(dir, "checkpoints", g.JobID.String())
			metadata, err := filepath.Glob(filepath.Join(jobDir, "checkpoints", "checkpoint-*.json"))
			require.NoError(t, err)
			assert.NotEmpty(t, metadata, "the retained checkpoint is on disk while the job runs (a newer one may be being added)")
			assert.FileExists(t, filepath.Join(jobDir, "checkpoint-id-counter"))

			require.NoError(t, mc.CancelJob(ctx, g.JobID))
			res, err := mc.RequestJobResult(ctx, g.JobID)
			require.NoError(t, err)
			require.Equal(t, jobgraph.JobStatusCanceled, res.Status)
			entry, err := s.JobResultStore().Get(ctx, g.JobID)
			require.NoError(t, err)
			assert.True(t, entry.Clean)
			_, err = os.Stat(filepath.Join(dir, "plans", g.JobID.String()+".json"))
			assert.ErrorIs(t, err, os.ErrNotExist, "the plan was removed")
			if !retain {
				_, err = os.Stat(jobDir)
				assert.ErrorIs(t, err, os.ErrNotExist, "the checkpoints, the counter and their directories are gone")
				return
			}
			metadata, err = filepath.Glob(filepath.Join(jobDir, "checkpoints", "checkpoint-*.json"))
			require.NoError(t, err)
			require.Len(t, metadata, 1, "the retained checkpoint stays")
			var id int64
			_, err = fmt.Sscanf(filepath.Base(metadata[0]), "checkpoint-%020d.json", &id)
			require.NoError(t, err)
			data, err := os.ReadFile(filepath.Join(jobDir, "checkpoint-id-counter"))
			require.NoError(t, err)
			next, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
			require.NoError(t, err)
			assert.Greater(t, next, id, "the counter stays past the retained checkpoint (a pending one aborted by the cancel may have taken an ID too)")
		})
	}
}
